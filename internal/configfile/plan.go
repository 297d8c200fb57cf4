package configfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/relay-llm/relay/openapi/client"
)

// Options tune a plan.
type Options struct {
	// Prune deletes the objects of the kinds present in the documents that
	// the documents do not describe. Kinds absent from the documents are
	// never deleted.
	Prune bool
	// AllowSecrets accepts host keys with a literal `secret` (sealed by the
	// control plane). Without it such a document is refused.
	AllowSecrets bool
	// Parallel is how many API calls run at once (reads, and the writes of
	// one kind); 0 means 4.
	Parallel int
	// AsCaller runs the plan as whoever the client's calls authenticate as,
	// a signed-in user too: the control plane's own apply (POST /api/apply)
	// sets it, where every call is made as its caller and answers only what
	// the caller's role bindings allow. Without it a plan needs the admin
	// token, so that a remote apply never plans against a partial view.
	AsCaller bool
}

// ErrNoSuchObject is what a document naming an object that neither the
// documents nor the control plane have (as far as the caller can see) wraps.
var ErrNoSuchObject = errors.New("no such object")

// noSuchError is a reference to an object the plan cannot find.
type noSuchError struct{ msg string }

func (e *noSuchError) Error() string        { return e.msg }
func (e *noSuchError) Is(target error) bool { return target == ErrNoSuchObject }

// Action is what a step does.
type Action byte

const (
	ActionCreate Action = '+'
	ActionUpdate Action = '~'
	ActionDelete Action = '-'
)

func (a Action) verb() string {
	switch a {
	case ActionCreate:
		return "create"
	case ActionUpdate:
		return "update"
	}
	return "delete"
}

// Change is one field an update changes, formatted for people.
type Change struct {
	Field    string
	Old, New string // for a set, New is "+a, -b" and Old is empty
}

func (c Change) String() string {
	if c.Old == "" {
		return c.Field + ": " + c.New
	}
	return c.Field + ": " + c.Old + " → " + c.New
}

// Step is one change of a plan.
type Step struct {
	Action  Action
	Kind    Kind
	Name    string
	Source  Source   // the document (create, update)
	Changes []Change // update
	Note    string   // delete: what the database deletes with it

	want *object // create, update
	have *object // update, delete
}

func (s Step) String() string {
	line := fmt.Sprintf("%c %s %s %s", s.Action, s.Action.verb(), s.Kind, s.Name)
	if len(s.Changes) > 0 {
		parts := make([]string, len(s.Changes))
		for i, c := range s.Changes {
			parts[i] = c.String()
		}
		line += " (" + strings.Join(parts, ", ") + ")"
	}
	if s.Note != "" {
		line += " (" + s.Note + ")"
	}
	return line
}

// Plan is what apply would do: its steps in the order they run (creates and
// updates in dependency order, then deletes in the reverse order).
type Plan struct {
	Steps    []Step
	Warnings []string

	c    *client.ClientWithResponses
	cur  *state
	opts Options
}

// Empty reports whether the plan changes nothing.
func (p *Plan) Empty() bool { return len(p.Steps) == 0 }

// Counts returns how many steps create, update and delete.
func (p *Plan) Counts() (create, update, del int) {
	for _, s := range p.Steps {
		switch s.Action {
		case ActionCreate:
			create++
		case ActionUpdate:
			update++
		case ActionDelete:
			del++
		}
	}
	return
}

// Print writes the plan, one line per step, and a summary line.
func (p *Plan) Print(w io.Writer) error {
	if p.Empty() {
		_, err := fmt.Fprintln(w, "no changes")
		return err
	}
	var b strings.Builder
	for _, s := range p.Steps {
		b.WriteString(s.String())
		b.WriteByte('\n')
	}
	c, u, d := p.Counts()
	fmt.Fprintf(&b, "plan: %d to create, %d to update, %d to delete\n", c, u, d)
	_, err := io.WriteString(w, b.String())
	return err
}

// NewPlan reads the control plane's state through c and compares the
// documents with it. It fails, before anything is written, on a document
// that repeats another, names an object that neither the documents nor the
// control plane have (or that the plan deletes), carries a literal secret
// without opts.AllowSecrets, or breaks the API's schema.
func NewPlan(ctx context.Context, c *client.ClientWithResponses, docs []Document, opts Options) (*Plan, error) {
	if opts.Parallel <= 0 {
		opts.Parallel = 4
	}
	want := newState()
	var inFiles [numKinds]bool
	for _, d := range docs {
		o := &object{kind: d.Kind, spec: d.spec, src: d.Source}
		if prev, dup := want.objs[d.Kind][o.name()]; dup {
			return nil, docError(o, fmt.Errorf("repeats the document at %s", prev.src))
		}
		if hk, ok := d.spec.(*HostKeySpec); ok && hk.Secret != "" && !opts.AllowSecrets {
			return nil, docError(o, errors.New("a literal secret in a file is refused: use secret_ref: env:NAME (or pass --allow-secrets)"))
		}
		if ms, ok := d.spec.(*MCPServerSpec); ok && ms.AuthSecret != "" && !opts.AllowSecrets {
			return nil, docError(o, errors.New("auth_secret: a literal secret in a file is refused: use auth_secret_ref: env:NAME (or pass --allow-secrets)"))
		}
		if ms, ok := d.spec.(*MCPServerSpec); ok && ms.OAuth != nil && ms.OAuth.ClientSecret != "" && !opts.AllowSecrets {
			return nil, docError(o, errors.New("oauth.client_secret: a literal secret in a file is refused: use client_secret_ref: env:NAME (or pass --allow-secrets)"))
		}
		want.objs[d.Kind][o.name()] = o
		inFiles[d.Kind] = true
	}
	cur, err := readState(ctx, c, opts.Parallel, opts.AsCaller)
	if err != nil {
		return nil, err
	}
	p := &Plan{c: c, cur: cur, opts: opts}

	// A reference must name an object that will exist after the apply.
	deleted := func(k Kind, key string) bool { return opts.Prune && inFiles[k] && want.objs[k][key] == nil }
	for k := range numKinds {
		for _, o := range want.sorted(k) {
			for _, r := range o.spec.refs() {
				if want.objs[r.kind][r.key] != nil {
					continue
				}
				if cur.objs[r.kind][r.key] == nil {
					return nil, docError(o, &noSuchError{fmt.Sprintf("%s: no %s %q in the files or in Relay", r.field, r.kind, r.key)})
				}
				if deleted(r.kind, r.key) {
					return nil, docError(o, fmt.Errorf("%s: %s %q is not in the files, and --prune deletes it", r.field, r.kind, r.key))
				}
			}
		}
	}

	for k := range numKinds {
		for _, o := range want.sorted(k) {
			have := cur.objs[k][o.name()]
			if have == nil {
				if hk, ok := o.spec.(*HostKeySpec); ok && hk.SecretRef == "" && hk.Secret == "" {
					return nil, docError(o, errors.New("a new host key needs secret_ref: env:NAME"))
				}
				if ms, ok := o.spec.(*MCPServerSpec); ok && ms.AuthHeader != "" && ms.AuthSecretRef == "" && ms.AuthSecret == "" {
					return nil, docError(o, errors.New("auth_header: a new MCP server's credential needs auth_secret_ref: env:NAME"))
				}
				if ms, ok := o.spec.(*MCPServerSpec); ok && ms.OAuth != nil && ms.OAuth.ClientSecretRef == "" && ms.OAuth.ClientSecret == "" {
					return nil, docError(o, errors.New("oauth: a new MCP server's client credentials need client_secret_ref: env:NAME"))
				}
				p.Steps = append(p.Steps, Step{Action: ActionCreate, Kind: k, Name: o.name(), Source: o.src, want: o})
				continue
			}
			if ps, ok := o.spec.(*PolicySpec); ok && ps.Team != have.spec.(*PolicySpec).Team {
				return nil, docError(o, fmt.Errorf("team: the owner of a policy never changes (Relay has %q); make a policy with another slug", have.spec.(*PolicySpec).Team))
			}
			if ms, ok := o.spec.(*MCPServerSpec); ok {
				if err := mcpServerChange(ms, have); err != nil {
					return nil, docError(o, err)
				}
			}
			changes := diff(o, have)
			if len(changes) > 0 {
				p.Steps = append(p.Steps, Step{Action: ActionUpdate, Kind: k, Name: o.name(), Source: o.src, Changes: changes, want: o, have: have})
			}
		}
	}
	if opts.Prune {
		p.Steps = append(p.Steps, deletes(want, cur, inFiles)...)
		if err := refusals(want, cur, p.Steps); err != nil {
			return nil, err
		}
	}
	for k := range numKinds {
		if inFiles[k] && !opts.Prune && len(cur.extra[k]) > 0 {
			p.Warnings = append(p.Warnings, fmt.Sprintf("Relay has %d %s object(s) that repeat another's natural key; --prune deletes them", len(cur.extra[k]), k))
		}
	}
	if err := p.preflight(); err != nil {
		return nil, err
	}
	return p, nil
}

// deletes lists what --prune deletes, in reverse dependency order, noting
// what the database deletes along (its ON DELETE CASCADE) that the plan does
// not already delete.
func deletes(want, cur *state, inFiles [numKinds]bool) []Step {
	var steps []Step
	gone := map[*object]bool{}
	for k := numKinds - 1; k >= 0; k-- {
		if !inFiles[k] {
			continue
		}
		for _, o := range cur.sorted(k) {
			if want.objs[k][o.name()] == nil {
				steps = append(steps, Step{Action: ActionDelete, Kind: k, Name: o.name(), have: o})
				gone[o] = true
			}
		}
		for _, o := range cur.extra[k] {
			steps = append(steps, Step{Action: ActionDelete, Kind: k, Name: o.name() + " (duplicate " + o.id.String() + ")", have: o})
			gone[o] = true
		}
	}
	// Who goes along: objects that are not deleted themselves and refer,
	// with cascade, to a deleted one.
	along := map[*object]map[Kind]int{}
	for k := range numKinds {
		for _, o := range cur.objs[k] {
			if gone[o] {
				continue
			}
			for _, r := range o.spec.refs() {
				t := cur.objs[r.kind][r.key]
				if r.cascade && t != nil && gone[t] {
					if along[t] == nil {
						along[t] = map[Kind]int{}
					}
					along[t][k]++
					break
				}
			}
		}
	}
	for i := range steps {
		counts := along[steps[i].have]
		if len(counts) == 0 {
			continue
		}
		var parts []string
		for k := range numKinds {
			if n := counts[k]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, k))
			}
		}
		steps[i].Note = "also deletes " + strings.Join(parts, ", ")
	}
	return steps
}

// refusals foresees the deletes Relay would refuse (409): a deleted object
// that an object surviving the apply still names through a restricting
// reference (a team with projects the plan keeps, a policy a kept service
// account names). The surviving object's references are those it will have
// after the apply: its document's when the files hold it. A dry run so says
// what the real run would meet, before anything is changed.
func refusals(want, cur *state, steps []Step) error {
	gone := map[*object]bool{}
	for _, st := range steps {
		if st.Action == ActionDelete {
			gone[st.have] = true
		}
	}
	// What the database deletes along goes too (to a fixed point: a project
	// takes its service accounts, a team its policies).
	for changed := true; changed; {
		changed = false
		for k := range numKinds {
			for _, o := range cur.objs[k] {
				if gone[o] {
					continue
				}
				for _, r := range o.spec.refs() {
					if t := cur.objs[r.kind][r.key]; r.cascade && t != nil && gone[t] {
						gone[o], changed = true, true
						break
					}
				}
			}
		}
	}
	for k := range numKinds {
		for _, o := range cur.sorted(k) {
			if gone[o] {
				continue
			}
			after := o
			if w := want.objs[k][o.name()]; w != nil {
				after = w
			}
			for _, r := range after.spec.refs() {
				if t := cur.objs[r.kind][r.key]; r.restrict && t != nil && gone[t] {
					return fmt.Errorf("--prune would delete %s %s, but %s %s (which this apply keeps) names it in %s: Relay would refuse the delete (409); delete or repoint it too",
						r.kind, r.key, k, o.name(), r.field)
				}
			}
		}
	}
	return nil
}

func docError(o *object, err error) error {
	return &DocError{Source: o.src, Kind: o.kind.String(), Name: o.name(), Err: err}
}

// diff compares what a document wants with what the control plane has,
// field by field, in the order of the spec's fields.
func diff(want, have *object) []Change {
	wv, hv := reflect.ValueOf(want.spec).Elem(), reflect.ValueOf(have.spec).Elem()
	t := wv.Type()
	var out []Change
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("cfg")
		name := yamlName(f)
		if tag == "key" || tag == "secret" {
			continue
		}
		w, h := wv.Field(i), hv.Field(i)
		if want.kind == KindHostKey && name == "secret_ref" {
			out = append(out, secretChange(want.spec.(*HostKeySpec), have)...)
			continue
		}
		if want.kind == KindMCPServer && name == "auth_secret_ref" {
			out = append(out, credentialChange(want.spec.(*MCPServerSpec), have)...)
			continue
		}
		if want.kind == KindMCPServer && name == "oauth" {
			out = append(out, oauthChange(want.spec.(*MCPServerSpec).OAuth, have.spec.(*MCPServerSpec).OAuth)...)
			continue
		}
		if reflect.DeepEqual(w.Interface(), h.Interface()) {
			continue
		}
		if tag == "set" {
			out = append(out, Change{Field: name, New: setChange(w.Interface().([]string), h.Interface().([]string))})
			continue
		}
		out = append(out, Change{Field: name, Old: formatValue(h), New: formatValue(w)})
	}
	return out
}

// secretChange compares a host key's secret. A document without secret_ref
// (and without a literal secret) leaves the secret alone. A literal secret
// cannot be compared with a sealed one (the control plane never shows it),
// so it replaces only an env reference.
func secretChange(want *HostKeySpec, have *object) []Change {
	old := "(sealed)"
	if !have.sealed {
		old = have.spec.(*HostKeySpec).SecretRef
	}
	switch {
	case want.SecretRef != "" && want.SecretRef != old:
		return []Change{{Field: "secret_ref", Old: old, New: want.SecretRef}}
	case want.Secret != "" && !have.sealed:
		return []Change{{Field: "secret", Old: old, New: "(sealed)"}}
	}
	return nil
}

// credentialChange compares an MCP server's credential as secretChange
// does a host key's: a document without auth_secret_ref or auth_secret
// leaves it as it is (a new auth_header aside, which the plan refuses
// without one), and a literal replaces only what is not sealed.
func credentialChange(want *MCPServerSpec, have *object) []Change {
	h := have.spec.(*MCPServerSpec)
	old := h.AuthSecretRef
	switch {
	case have.sealed:
		old = "(sealed)"
	case h.AuthHeader == "":
		old = "(none)"
	}
	switch {
	case want.AuthHeader == "":
		return nil // no header: no credential, which the auth_header change says
	case want.AuthSecretRef != "" && want.AuthSecretRef != old:
		return []Change{{Field: "auth_secret_ref", Old: old, New: want.AuthSecretRef}}
	case want.AuthSecret != "" && !have.sealed:
		return []Change{{Field: "auth_secret", Old: old, New: "(sealed)"}}
	}
	return nil
}

// oauthChange compares an MCP server's client credentials: the fields as
// they are, the secret as credentialChange does (a document without one
// keeps Relay's; a literal replaces only what is not sealed). The change
// never shows a literal secret.
func oauthChange(want, have *MCPOAuthSpec) []Change {
	if want.sameBut(have) {
		switch {
		case want == nil:
			return nil
		case want.ClientSecretRef != "" && (have.sealed || want.ClientSecretRef != have.ClientSecretRef):
		case want.ClientSecret != "" && !have.sealed:
		default:
			return nil
		}
	}
	return []Change{{Field: "oauth", Old: have.String(), New: want.String()}}
}

// mcpServerChange refuses the update of an MCP server the control API
// cannot make: a new auth_header without the credential to send in it.
func mcpServerChange(want *MCPServerSpec, have *object) error {
	h := have.spec.(*MCPServerSpec)
	if want.AuthHeader != "" && want.AuthHeader != h.AuthHeader && want.AuthSecretRef == "" && want.AuthSecret == "" {
		return errors.New("auth_header: a new header needs its credential: give auth_secret_ref: env:NAME")
	}
	if want.OAuth != nil && h.OAuth == nil && want.OAuth.ClientSecretRef == "" && want.OAuth.ClientSecret == "" {
		return errors.New("oauth: new client credentials need client_secret_ref: env:NAME")
	}
	return nil
}

func setChange(want, have []string) string {
	var parts []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			parts = append(parts, "+"+w)
		}
	}
	for _, h := range have {
		if !slices.Contains(want, h) {
			parts = append(parts, "-"+h)
		}
	}
	return strings.Join(parts, ", ")
}

// formatValue writes a field's value for a plan line.
func formatValue(v reflect.Value) string {
	if s, ok := v.Interface().(fmt.Stringer); ok {
		return s.String()
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return "null"
		}
		return formatValue(v.Elem())
	case reflect.String:
		s := v.String()
		if s == "" || strings.ContainsAny(s, " ,()\"") {
			return strconv.Quote(s)
		}
		return s
	case reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = formatValue(v.Index(i))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case reflect.Map:
		if v.Len() == 0 {
			return "{}"
		}
		parts := make([]string, 0, v.Len())
		for it := v.MapRange(); it.Next(); {
			parts = append(parts, formatValue(it.Key())+": "+formatValue(it.Value()))
		}
		slices.Sort(parts)
		return "{" + strings.Join(parts, ", ") + "}"
	case reflect.Struct:
		var n yaml.Node
		if err := n.Encode(v.Interface()); err != nil {
			return fmt.Sprint(v.Interface())
		}
		n.Style = yaml.FlowStyle
		b, err := yaml.Marshal(&n)
		if err != nil {
			return fmt.Sprint(v.Interface())
		}
		return strings.TrimSpace(string(b))
	}
	return fmt.Sprint(v.Interface())
}
