package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
)

// ChangesBody reports whether the profile changes the body of call c: when
// it does not, the proxy sends its body as it is. A nil profile never does.
func (p *Profile) ChangesBody(c Call) bool {
	if p == nil {
		return false
	}
	for i := range p.Rewrites {
		if p.Rewrites[i].applies(c) {
			return true
		}
	}
	return false
}

// Drops reports whether the profile removes the top-level member name
// from c's body (the proxy then never adds it: stream_options).
func (p *Profile) Drops(c Call, name string) bool {
	if p == nil {
		return false
	}
	for i := range p.Rewrites {
		r := &p.Rewrites[i]
		if !r.applies(c) {
			continue
		}
		for _, d := range r.Drop {
			if d == name {
				return true
			}
		}
	}
	return false
}

func (r *Rewrite) applies(c Call) bool {
	return (r.Shape == "" || r.Shape == c.Shape) && (r.Op == "" || r.Op == c.Op())
}

// DroppedHeaders names what c's header lists lose to the profile's
// allow-lists (HeaderList.Allow), comma-separated, for the caller's
// X-Relay-Dropped-Fields: each left-out name as "header:name"
// (anthropic-beta:claude-code-20250219); "" when nothing is left out. A
// body with its own member does not read the header, and names nothing.
func (p *Profile) DroppedHeaders(body []byte, c Call) string {
	if p == nil || c.Header == nil {
		return ""
	}
	var out []string
	for i := range p.Rewrites {
		r := &p.Rewrites[i]
		if !r.applies(c) {
			continue
		}
		for j := range r.HeaderLists {
			hl := &r.HeaderLists[j]
			left := hl.left(nil, c.Header)
			if len(left) == 0 {
				continue
			}
			if ms, err := members(body); err != nil || has(ms, hl.Member) {
				continue
			}
			for _, d := range left {
				if !slices.Contains(out, d) {
					out = append(out, d)
				}
			}
		}
	}
	return strings.Join(out, ",")
}

// errNotObject is a body that is not one JSON object.
var errNotObject = errors.New("request body is not a JSON object")

// Body appends c's body with the profile's rewrites applied to dst. Members
// keep their order and their bytes; the rewritten body is for the
// upstream alone. A body that is not a JSON object is an error (the
// proxy has already refused such bodies).
func (p *Profile) Body(dst, body []byte, c Call) ([]byte, error) {
	if !p.ChangesBody(c) {
		return append(dst, body...), nil
	}
	ms, err := members(body)
	if err != nil {
		return nil, err
	}
	for i := range p.Rewrites {
		r := &p.Rewrites[i]
		if !r.applies(c) {
			continue
		}
		ms, err = r.apply(ms, c)
		if err != nil {
			return nil, err
		}
	}
	return appendObject(dst, ms), nil
}

// member is one member of a JSON object: its name, unescaped, and its
// value's bytes.
type member struct {
	name  string
	value json.RawMessage
}

func (r *Rewrite) apply(ms []member, c Call) ([]member, error) {
	for _, d := range r.Drop {
		ms = without(ms, d)
	}
	for _, rn := range r.Rename {
		if !has(ms, rn.From) {
			continue
		}
		ms = without(ms, rn.To)
		for i := range ms {
			if ms[i].name == rn.From {
				ms[i].name = rn.To
			}
		}
	}
	for _, d := range r.Default {
		if !has(ms, d.From) {
			ms = append(ms, member{name: d.From, value: json.RawMessage(d.To)})
		}
	}
	for _, hl := range r.HeaderLists {
		if has(ms, hl.Member) {
			continue
		}
		if v := hl.list(c.Header); v != nil {
			ms = append(ms, member{name: hl.Member, value: v})
		}
	}
	if len(r.Roles) > 0 {
		for i := range ms {
			if ms[i].name != "messages" {
				continue
			}
			v, err := renameRoles(ms[i].value, r.Roles)
			if err != nil {
				return nil, err
			}
			ms[i].value = v
		}
	}
	return ms, nil
}

// renameRoles renames the role of every message in a messages array.
func renameRoles(raw json.RawMessage, roles []Pair) (json.RawMessage, error) {
	var msgs []json.RawMessage
	if json.Unmarshal(raw, &msgs) != nil {
		return raw, nil // not an array: the upstream says what is wrong with it
	}
	changed := false
	for i, m := range msgs {
		ms, err := members(m)
		if err != nil {
			continue
		}
		hit := false
		for j := range ms {
			if ms[j].name != "role" {
				continue
			}
			var role string
			if json.Unmarshal(ms[j].value, &role) != nil {
				continue
			}
			for _, rp := range roles {
				if role == rp.From {
					ms[j].value, _ = json.Marshal(rp.To)
					hit = true
				}
			}
		}
		if hit {
			msgs[i] = appendObject(nil, ms)
			changed = true
		}
	}
	if !changed {
		return raw, nil
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, m := range msgs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(m)
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// members reads a JSON object's members in order.
func members(body []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, errNotObject
	}
	var ms []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, errNotObject
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, errNotObject
		}
		ms = append(ms, member{name: name, value: v})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, errNotObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errNotObject
	}
	return ms, nil
}

func appendObject(dst []byte, ms []member) []byte {
	dst = append(dst, '{')
	for i, m := range ms {
		if i > 0 {
			dst = append(dst, ',')
		}
		name, _ := json.Marshal(m.name)
		dst = append(dst, name...)
		dst = append(dst, ':')
		dst = append(dst, m.value...)
	}
	return append(dst, '}')
}

func has(ms []member, name string) bool {
	for _, m := range ms {
		if m.name == name {
			return true
		}
	}
	return false
}

func without(ms []member, name string) []member {
	out := ms[:0]
	for _, m := range ms {
		if m.name != name {
			out = append(out, m)
		}
	}
	return out
}

// list is the JSON array of the allowed names the header lists, in their
// order and once each, or nil when it lists none.
// left is the names of the caller's header that Allow leaves out, each
// once, in order, as "header:name" (anthropic-beta:claude-code-20250219).
func (hl *HeaderList) left(dst []string, h http.Header) []string {
	if len(hl.Allow) == 0 {
		return dst
	}
	for _, v := range h.Values(hl.Header) {
		for _, n := range strings.Split(v, ",") {
			n = strings.TrimSpace(n)
			if n == "" || slices.Contains(hl.Allow, n) {
				continue
			}
			if d := hl.Header + ":" + n; !slices.Contains(dst, d) {
				dst = append(dst, d)
			}
		}
	}
	return dst
}

func (hl *HeaderList) list(h http.Header) json.RawMessage {
	var names []string
	for _, v := range h.Values(hl.Header) {
		for _, n := range strings.Split(v, ",") {
			n = strings.TrimSpace(n)
			if n == "" || slices.Contains(names, n) || (len(hl.Allow) > 0 && !slices.Contains(hl.Allow, n)) {
				continue
			}
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil
	}
	out, _ := json.Marshal(names)
	return out
}
