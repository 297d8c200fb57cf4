package ui

import (
	"errors"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/controlapi"
)

// vals reads a posted form into the API's request bodies, collecting a
// message per field it cannot read; the API checks the rest.
type vals struct {
	url.Values
	errs map[string]string
}

func newVals(v url.Values) *vals { return &vals{Values: v, errs: map[string]string{}} }

func (v *vals) str(name string) string { return strings.TrimSpace(v.Get(name)) }

func (v *vals) optStr(name string) *string {
	if s := v.str(name); s != "" {
		return &s
	}
	return nil
}

func (v *vals) on(name string) bool { return v.Get(name) == "on" }

func (v *vals) onPtr(name string) *bool { b := v.on(name); return &b }

func (v *vals) optInt32(name string) *int32 {
	s := v.str(name)
	if s == "" {
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		v.errs[name] = "enter a whole number"
		return nil
	}
	i := int32(n)
	return &i
}

// optPrice reads a price per million tokens in currency units ("2.50") as
// the API's micro-units.
func (v *vals) optPrice(name string) *int64 {
	s := v.str(name)
	if s == "" {
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || f > 1e9 {
		v.errs[name] = "enter a price like 2.50"
		return nil
	}
	n := int64(math.Round(f * 1e6))
	return &n
}

func (v *vals) id(name, kind string) uuid.UUID {
	id, err := uuid.Parse(v.str(name))
	if err != nil {
		v.errs[name] = "choose a " + kind
	}
	return id
}

func (v *vals) optID(name string) *uuid.UUID {
	s := v.str(name)
	if s == "" {
		return nil
	}
	id, err := uuid.Parse(s)
	if err != nil {
		v.errs[name] = "not one of the choices"
		return nil
	}
	return &id
}

func (v *vals) ids(name string) []uuid.UUID {
	var out []uuid.UUID
	for _, s := range v.Values[name] {
		if id, err := uuid.Parse(s); err == nil {
			out = append(out, id)
		}
	}
	return out
}

// err is the form's problems so far as an error (nil when there are none).
func (v *vals) err() error {
	if len(v.errs) == 0 {
		return nil
	}
	return &formError{controlapi.Problem{Status: http.StatusUnprocessableEntity, Message: "Check the fields marked below.", Fields: v.errs}}
}

type formError struct{ controlapi.Problem }

func (e *formError) Error() string { return e.Message }

// explain turns an error of a form's write into the problem to show.
func explain(method string, err error) controlapi.Problem {
	var fe *formError
	if errors.As(err, &fe) {
		return fe.Problem
	}
	pr := controlapi.Explain(method, err)
	if len(pr.Fields) > 0 && pr.Status < 500 {
		for f, m := range pr.Fields {
			switch {
			case m == "taken":
				pr.Fields[f] = pr.Message
			case strings.Contains(m, "regular expression") && (f == "slug" || strings.HasSuffix(f, ".slug")):
				pr.Fields[f] = "use lower-case letters, digits, dots, dashes and underscores, starting with a letter or digit (at most 63)"
			case strings.Contains(m, "regular expression"):
				pr.Fields[f] = "this is not in the expected form"
			}
		}
		pr.Message = "Check the fields marked below."
	}
	return pr
}

func text(name, label, value string) field {
	return field{Name: name, Label: label, Kind: "text", Value: value}
}

func number(name, label, value string) field {
	return field{Name: name, Label: label, Kind: "number", Value: value}
}

func checkbox(name, label string, on bool) field {
	return field{Name: name, Label: label, Kind: "checkbox", Checked: on}
}

func selectOf(name, label, value string, opts []option) field {
	out := make([]option, len(opts))
	for i, o := range opts {
		o.Selected = o.Value == value
		out[i] = o
	}
	return field{Name: name, Label: label, Kind: "select", Options: out}
}

func checklist(name, label string, chosen []string, opts []option) field {
	set := map[string]bool{}
	for _, c := range chosen {
		set[c] = true
	}
	out := make([]option, len(opts))
	for i, o := range opts {
		o.Selected = set[o.Value]
		out[i] = o
	}
	return field{Name: name, Label: label, Kind: "checklist", Options: out}
}

func enumOptions(values ...string) []option {
	out := make([]option, len(values))
	for i, v := range values {
		out[i] = option{Value: v, Label: v}
	}
	return out
}

func withNone(label string, opts []option) []option {
	return append([]option{{Value: "", Label: label}}, opts...)
}

func inputType(kind string) string {
	switch kind {
	case "number", "password", "email":
		return kind
	case "datetime":
		return "datetime-local"
	}
	return "text"
}

func itoa(n int) string { return strconv.Itoa(n) }

func price(n int64) string { return strconv.FormatFloat(float64(n)/1e6, 'f', -1, 64) }

func idStr(id *uuid.UUID) string {
	if id == nil {
		return ""
	}
	return id.String()
}
