package guardrail

import "bytes"

// Hold checks a streamed answer that reaches the caller in chunks — its
// stream events, in the caller's shape — each carrying some of the
// answer's text. A chunk is released only once every byte of its text has
// been checked with Window bytes of text after it (or the answer's end)
// and no match a rule is still deciding on reaches into it, so no
// unchecked byte is released. A redacting rule's match is replaced inside
// the chunk that holds it (and in every later chunk, which may repeat the
// text whole); a match split across chunks cannot be, and blocks.
// Placeholders of the request's Redactor are restored where one chunk
// holds them whole.
type Hold struct {
	rules  []Rule
	red    *Redactor
	window int
	text   []byte // the answer's text from offset base on
	base   int
	// done[i] is where rule i's handled matches end: a match starting
	// before it was acted on already.
	done     []int
	redacted []span
	chunks   []chunk
	// rp replaces what was redacted in every later chunk too: an answer's
	// closing events repeat its text whole.
	rp       Replacer
	restorer *Replacer
	released int // the text offset the released chunks reach
	fs       []Finding
	over     bool
	// memo[i] keeps rule i's scans from running an expression twice over
	// the same bytes (memo.go).
	memo []Memo
}

type span struct{ start, end int }

type chunk struct {
	b   []byte
	end int // the text offset after the chunk's text
}

// NewHold returns a Hold for rules holding back window bytes of text (at
// least MaxMatch); red is the request's Redactor (nil: none).
func NewHold(rules []Rule, red *Redactor, window int) *Hold {
	return &Hold{rules: rules, red: red, window: max(window, MaxMatch+MaxPlaceholder), done: make([]int, len(rules)), memo: make([]Memo, len(rules))}
}

// Findings are what the rules found so far.
func (h *Hold) Findings() []Finding { return h.fs }

// Held is how many bytes of chunks wait.
func (h *Hold) Held() int {
	n := 0
	for i := range h.chunks {
		n += len(h.chunks[i].b)
	}
	return n
}

// Add takes the next chunk and the text it carries. It appends to dst what
// may go to the caller now, or returns the finding that blocks (after
// which nothing more is released).
func (h *Hold) Add(dst, b []byte, text string) ([]byte, *Finding) {
	if h.over {
		return dst, nil
	}
	h.text = append(h.text, text...)
	c := chunk{end: h.base + len(h.text)}
	if !h.rp.Empty() {
		c.b, _ = h.rp.Rewrite(nil, b)
	} else {
		c.b = append([]byte(nil), b...)
	}
	if h.red.restoring() && (bytes.Contains(c.b, []byte(open)) || bytes.Contains(c.b, []byte(`\u00ab`))) {
		if h.restorer == nil {
			h.restorer = h.red.restorer()
		}
		c.b, _ = h.restorer.Rewrite(nil, c.b)
	}
	h.chunks = append(h.chunks, c)
	return h.check(dst, false)
}

// End releases the rest once the answer has ended.
func (h *Hold) End(dst []byte) ([]byte, *Finding) {
	if h.over {
		return dst, nil
	}
	dst, f := h.check(dst, true)
	h.over = true
	return dst, f
}

func (h *Hold) check(dst []byte, final bool) ([]byte, *Finding) {
	held := string(h.text)
	safe := len(held)
	if !final {
		safe = max(len(held)-h.window, 0)
	}
	for i := range h.rules {
		r := &h.rules[i]
		var memo *Memo
		if h.memo != nil {
			memo = &h.memo[i]
		}
		for _, m := range ScanAt(r.Detectors, held, h.base, memo) {
			start, end := h.base+m.Start, h.base+m.End
			if start < h.done[i] {
				continue
			}
			if !final && m.End > len(held)-h.window {
				safe = min(safe, m.Start) // still growing: hold it back
				continue
			}
			h.done[i] = end
			f := Finding{Rule: r.Name, Kind: m.Kind, Action: r.Action}
			h.fs = append(h.fs, f)
			switch r.Action {
			case ActionBlock:
				h.over = true
				return dst, &f
			case ActionRedact:
				if h.overlapsRedacted(start, end) {
					continue
				}
				if !h.replace(start, end, held[m.Start:m.End], h.placeholder(m.Kind, held[m.Start:m.End])) {
					h.over = true
					f.Action = ActionBlock
					return dst, &f
				}
				h.redacted = append(h.redacted, span{start, end})
			}
		}
	}
	// Release the chunks wholly before safe.
	lim := h.base + safe
	k := 0
	for k < len(h.chunks) && h.chunks[k].end <= lim {
		dst = append(dst, h.chunks[k].b...)
		h.released = h.chunks[k].end
		k++
	}
	h.chunks = append(h.chunks[:0], h.chunks[k:]...)
	// Keep a little text before safe, for the detectors' word boundaries.
	if cut := max(safe-64, 0); cut > 0 {
		h.text = append(h.text[:0], h.text[cut:]...)
		h.base += cut
	}
	for len(h.redacted) > 0 && h.redacted[0].end <= h.base {
		h.redacted = h.redacted[1:]
	}
	return dst, nil
}

func (h *Hold) placeholder(k Kind, orig string) string {
	if h.red == nil {
		h.red = &Redactor{}
	}
	return h.red.Placeholder(k, orig)
}

func (h *Hold) overlapsRedacted(start, end int) bool {
	for _, s := range h.redacted {
		if start < s.end && s.start < end {
			return true
		}
	}
	return false
}

// replace rewrites from to to in the chunk that holds the text [start,
// end) whole, and in every chunk after it; false when no one chunk holds
// it, or that chunk does not spell from.
func (h *Hold) replace(start, end int, from, to string) bool {
	prev := h.released
	for i := range h.chunks {
		c := &h.chunks[i]
		if start >= prev && end <= c.end {
			var rp Replacer
			rp.Add(from, to)
			out, n := rp.Rewrite(nil, c.b)
			if n == 0 {
				return false
			}
			c.b = out
			for j := i + 1; j < len(h.chunks); j++ {
				h.chunks[j].b, _ = rp.Rewrite(nil, h.chunks[j].b)
			}
			h.rp.Add(from, to)
			return true
		}
		prev = c.end
	}
	return false
}
