package translator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// Caller side, for every caller shape: strict decoding with errors that
// name the field, and the bare forms (a tool_choice mode, string content)
// several shapes allow.

// decodeStrict unmarshals a caller's body into v, refusing fields the
// hand-written types do not know: a field Relay would drop is a 400, never
// a silent loss.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return withPath(bodyError(err), body, v)
	}
	if _, err := dec.Token(); err != io.EOF {
		return &wire.Error{Kind: wire.ErrMalformedRequest, Msg: "The request body holds data after its JSON object."}
	}
	return nil
}

// bodyError turns a decoding error into a caller-facing 400.
func bodyError(err error) error {
	var we *wire.Error
	if errors.As(err, &we) {
		return we
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "body"
		}
		return &wire.Error{Kind: wire.ErrMalformedRequest, Param: field,
			Msg: fmt.Sprintf("Invalid type for %q: expected %s, got a JSON %s.", field, jsonKind(te.Type.String()), te.Value)}
	}
	if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
		field, _ := strconv.Unquote(strings.TrimPrefix(msg, "json: unknown field "))
		return &wire.Error{Kind: wire.ErrUnsupportedFeature, Param: field,
			Msg: fmt.Sprintf("The field %q is not one Relay can translate to another shape; send it only to a model bound in the caller's own shape.", field)}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &wire.Error{Kind: wire.ErrMalformedRequest, Msg: fmt.Sprintf("Could not parse the request body: malformed JSON at byte %d.", se.Offset)}
	}
	return &wire.Error{Kind: wire.ErrMalformedRequest, Msg: "Could not parse the request body: " + err.Error() + "."}
}

func jsonKind(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "a boolean"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "float"):
		return "a number"
	}
	return "an object"
}

// badField is a 400 for a malformed value of field.
func badField(field, format string, args ...any) error {
	return &wire.Error{Kind: wire.ErrMalformedRequest, Param: field, Msg: fmt.Sprintf("Invalid %q: ", field) + fmt.Sprintf(format, args...) + "."}
}

// unsupported is a 400 for a field no binding of another shape can take.
func unsupported(field, why string) error {
	msg := fmt.Sprintf("The field %q cannot be translated to another shape", field)
	if why != "" {
		msg += ": " + why
	}
	return &wire.Error{Kind: wire.ErrUnsupportedFeature, Param: field, Msg: msg + "."}
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// toolChoiceMode reads a tool_choice given as a bare mode, as OpenAI's
// shapes allow ("auto", "none", "required"); ok is false when raw is not a
// string, and the caller reads its object form.
func toolChoiceMode(raw json.RawMessage, tc *canonical.ToolChoice) (ok bool, err error) {
	var mode string
	if json.Unmarshal(raw, &mode) != nil {
		return false, nil
	}
	switch m := canonical.ToolChoiceMode(mode); m {
	case canonical.ToolChoiceAuto, canonical.ToolChoiceNone, canonical.ToolChoiceRequired:
		tc.Mode = m
		return true, nil
	}
	return true, badField("tool_choice", "unknown mode %q", mode)
}

// textContent reads content given as a bare JSON string, as every shape
// allows for text: ok is false when raw (trimmed, not empty) is not a
// string.
func textContent(raw json.RawMessage, at string) (s string, ok bool, err error) {
	if raw[0] != '"' {
		return "", false, nil
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", true, badField(at, "malformed string")
	}
	return s, true, nil
}

func originIf(sig string, o canonical.Origin) canonical.Origin {
	if sig == "" {
		return canonical.OriginNone
	}
	return o
}

// strictUnmarshal decodes a nested value refusing unknown fields; errors
// name the field under at.
func strictUnmarshal(raw json.RawMessage, v any, at string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		we, _ := withPath(bodyError(err), raw, v).(*wire.Error)
		if we == nil {
			return badField(at, "malformed value")
		}
		if we.Param != "" {
			if strings.HasPrefix(we.Param, "[") {
				we.Param = at + we.Param
			} else {
				we.Param = at + "." + we.Param
			}
			if we.Kind == wire.ErrUnsupportedFeature {
				we.Msg = fmt.Sprintf("The field %q is not one Relay can translate to another shape; send it only to a model bound in the caller's own shape.", we.Param)
			} else {
				we.Msg = fmt.Sprintf("Invalid %q: malformed value.", we.Param)
			}
		}
		return we
	}
	return nil
}

// withPath gives an unknown-field error the field's whole path in body
// (messages[2].cache_control, tools[0].eager_input_streaming): encoding/json
// names only the member. Other errors pass unchanged.
func withPath(err error, body []byte, v any) error {
	we, ok := err.(*wire.Error)
	if !ok || we.Kind != wire.ErrUnsupportedFeature || we.Param == "" {
		return err
	}
	path, found := unknownPath(body, reflect.TypeOf(v), we.Param)
	if !found || path == we.Param {
		return err
	}
	c := *we
	c.Param = path
	c.Msg = strings.Replace(c.Msg, strconv.Quote(we.Param), strconv.Quote(path), 1)
	return &c
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// unknownPath finds the first member named field (in key order) that type
// t does not know, walking raw and t together; the path is relative to
// raw ("[0].x" when raw is an array).
func unknownPath(raw []byte, t reflect.Type, field string) (string, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType {
		return "", false
	}
	join := func(head, sub string) string {
		if strings.HasPrefix(sub, "[") {
			return head + sub
		}
		return head + "." + sub
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return "", false
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			ft, known := memberType(t, k)
			if !known {
				if k == field {
					return k, true
				}
				continue
			}
			if sub, ok := unknownPath(obj[k], ft, field); ok {
				return join(k, sub), true
			}
		}
	case reflect.Slice, reflect.Array:
		var arr []json.RawMessage
		if json.Unmarshal(raw, &arr) != nil {
			return "", false
		}
		for i, el := range arr {
			if sub, ok := unknownPath(el, t.Elem(), field); ok {
				return join("["+strconv.Itoa(i)+"]", sub), true
			}
		}
	case reflect.Map:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return "", false
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if sub, ok := unknownPath(obj[k], t.Elem(), field); ok {
				return join(k, sub), true
			}
		}
	}
	return "", false
}

// memberType is the type of struct t's member named key as encoding/json
// matches it (its tag name, case-insensitively; embedded structs' members
// included).
func memberType(t reflect.Type, key string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			et := f.Type
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if ft, ok := memberType(et, key); ok {
					return ft, true
				}
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if strings.EqualFold(name, key) {
			return f.Type, true
		}
	}
	return nil, false
}
