package guardrail

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Rewriting a body in place. Detectors run on the text a request or an
// answer carries (decoded by the caller of this package); what they find is
// then replaced where the body spells it — inside JSON string values only,
// never object keys, with escapes decoded first — so a body keeps its
// shape, whatever provider's it is, and a stream event stays an event.

// Replacer maps values to what replaces them: originals to placeholders
// (redaction), or placeholders to originals (restoring).
type Replacer struct {
	from, to []string
}

// Add maps from to to.
func (r *Replacer) Add(from, to string) {
	if from == "" || from == to {
		return
	}
	r.from, r.to = append(r.from, from), append(r.to, to)
}

// Empty reports whether r replaces nothing.
func (r *Replacer) Empty() bool { return len(r.from) == 0 }

func (r *Replacer) apply(s string) (string, bool) {
	changed := false
	for i, f := range r.from {
		if strings.Contains(s, f) {
			s, changed = strings.ReplaceAll(s, f, r.to[i]), true
		}
	}
	return s, changed
}

// Rewrite appends b to dst with every JSON string value passed through r.
// It reports how many values changed. Bytes outside strings (SSE framing,
// JSON structure) are copied as they are.
func (r *Replacer) Rewrite(dst, b []byte) ([]byte, int) {
	n := 0
	for {
		i := bytes.IndexByte(b, '"')
		if i < 0 {
			return append(dst, b...), n
		}
		end := stringEnd(b, i)
		if end < 0 {
			return append(dst, b...), n
		}
		dst = append(dst, b[:i]...)
		tok := b[i:end]
		b = b[end:]
		if isKey(b) || r.Empty() {
			dst = append(dst, tok...)
			continue
		}
		s, ok := decodeString(tok)
		if !ok {
			dst = append(dst, tok...)
			continue
		}
		s, changed := r.apply(s)
		if !changed {
			dst = append(dst, tok...)
			continue
		}
		dst = appendJSONString(dst, s)
		n++
	}
}

// Strings calls fn with every JSON string value (not object keys) of b,
// escapes decoded.
func Strings(b []byte, fn func(string)) {
	for {
		i := bytes.IndexByte(b, '"')
		if i < 0 {
			return
		}
		end := stringEnd(b, i)
		if end < 0 {
			return
		}
		tok := b[i:end]
		b = b[end:]
		if isKey(b) {
			continue
		}
		if s, ok := decodeString(tok); ok && s != "" {
			fn(s)
		}
	}
}

// stringEnd is the index after the closing quote of the string opening
// at b[i], or -1.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// isKey reports whether the bytes after a string make it an object key.
func isKey(rest []byte) bool {
	for _, c := range rest {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case ':':
			return true
		}
		return false
	}
	return false
}

func decodeString(tok []byte) (string, bool) {
	if bytes.IndexByte(tok, '\\') < 0 {
		return string(tok[1 : len(tok)-1]), true
	}
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		return "", false
	}
	return s, true
}

func appendJSONString(dst []byte, s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimRight(b.Bytes(), "\n")...)
}
