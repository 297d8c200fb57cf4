package guardrail

import (
	"strconv"
	"strings"
)

// Redactor replaces matches with typed placeholders, «EMAIL_1», and
// remembers what each stood for, so that an answer that echoes a
// placeholder gets the original back (Restore). One Redactor serves one
// request: placeholders are numbered per request and mean nothing across.
type Redactor struct {
	vals  map[string]string // placeholder → original
	by    map[string]string // original → placeholder: one value, one placeholder
	count map[Kind]int
	// restore: the placeholders stand in a request (MarkRequest).
	restore bool
}

// Placeholder delimiters: characters models copy as they are and text
// rarely holds.
const (
	open  = "«"
	close = "»"
)

// Redact returns text with each match replaced by its placeholder.
func (r *Redactor) Redact(text string, ms []Match) string {
	if len(ms) == 0 {
		return text
	}
	var b strings.Builder
	at := 0
	for _, m := range ms {
		b.WriteString(text[at:m.Start])
		b.WriteString(r.Placeholder(m.Kind, text[m.Start:m.End]))
		at = m.End
	}
	b.WriteString(text[at:])
	return b.String()
}

// Placeholder returns the placeholder of orig, a value of kind k, making
// one the first time orig is seen.
func (r *Redactor) Placeholder(k Kind, orig string) string {
	if r.vals == nil {
		r.vals, r.by, r.count = map[string]string{}, map[string]string{}, map[Kind]int{}
	}
	ph, ok := r.by[orig]
	if !ok {
		r.count[k]++
		ph = open + strings.ToUpper(string(k)) + "_" + strconv.Itoa(r.count[k]) + close
		r.vals[ph], r.by[orig] = orig, ph
	}
	return ph
}

// Placeholders reports whether r replaced anything.
func (r *Redactor) Placeholders() bool { return len(r.vals) > 0 }

// Restore returns text with every placeholder r made replaced by its
// original.
func (r *Redactor) Restore(text string) string {
	if len(r.vals) == 0 || !strings.Contains(text, open) {
		return text
	}
	var b strings.Builder
	for {
		i := strings.Index(text, open)
		if i < 0 {
			break
		}
		j := strings.Index(text[i:], close)
		if j < 0 {
			break
		}
		ph := text[i : i+j+len(close)]
		b.WriteString(text[:i])
		if v, ok := r.vals[ph]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(ph)
		}
		text = text[i+j+len(close):]
	}
	b.WriteString(text)
	return b.String()
}

// MaxPlaceholder is the longest placeholder Restore may have to see
// whole: a Stream restoring placeholders holds back this much too.
const MaxPlaceholder = 40
