package guardrail

import "strings"

// Answer checks a whole answer: body is what the caller gets (JSON in the
// caller's shape), text the text the answer carries. A redacting rule's
// matches are replaced in body by placeholders of red, and the
// placeholders red made for the request are restored. It returns the new
// body, or the finding that blocks it; a match that cannot be redacted
// where body spells it blocks, since it cannot be let through.
func Answer(rules []Rule, red *Redactor, body []byte, text string, fs []Finding) ([]byte, *Finding, []Finding) {
	redact, block, fs := Check(rules, text, fs)
	if block != nil {
		return body, block, fs
	}
	if red == nil {
		red = &Redactor{}
	}
	var rp Replacer
	for _, m := range redact {
		rp.Add(text[m.Start:m.End], red.Placeholder(m.Kind, text[m.Start:m.End]))
	}
	if !rp.Empty() {
		out, n := rp.Rewrite(nil, body)
		if n == 0 {
			return body, unredactable(redact[0], rules, text), fs
		}
		body = out
	}
	if red.restoring() && strings.Contains(text, open) {
		body, _ = red.restorer().Rewrite(nil, body)
	}
	return body, nil, fs
}

// unredactable is the blocking finding for a match that could not be
// redacted.
func unredactable(m Match, rules []Rule, text string) *Finding {
	f := &Finding{Kind: m.Kind, Action: ActionBlock}
	for i := range rules {
		if rules[i].Action != ActionRedact {
			continue
		}
		if f.Rule == "" {
			f.Rule = rules[i].Name
		}
		if len(Scan(rules[i].Detectors, text[m.Start:m.End])) > 0 {
			f.Rule = rules[i].Name
			break
		}
	}
	return f
}

// restoring reports whether r made placeholders for a request.
func (r *Redactor) restoring() bool { return r != nil && r.restore && len(r.vals) > 0 }

// MarkRequest says r's placeholders stand in a request: an answer that
// echoes them gets the originals back.
func (r *Redactor) MarkRequest() { r.restore = true }

// restorer maps r's placeholders back to their originals.
func (r *Redactor) restorer() *Replacer {
	var rp Replacer
	for ph, orig := range r.vals {
		rp.Add(ph, orig)
	}
	return &rp
}

// Request redacts a request: texts are the texts it carries (system prompt,
// turns, tool results), body its JSON as the caller sent it. It returns
// the body with the redacting rules' matches replaced by placeholders of
// red (nil body when nothing was redacted), or the finding that blocks.
func Request(rules []Rule, red *Redactor, body []byte, texts []string, fs []Finding) ([]byte, *Finding, []Finding) {
	var rp Replacer
	var first *Match
	var firstText string
	for _, t := range texts {
		redact, block, f := Check(rules, t, fs)
		fs = f
		if block != nil {
			return nil, block, fs
		}
		for _, m := range redact {
			if first == nil {
				first, firstText = &m, t
			}
			rp.Add(t[m.Start:m.End], red.Placeholder(m.Kind, t[m.Start:m.End]))
		}
	}
	if rp.Empty() {
		return nil, nil, fs
	}
	out, n := rp.Rewrite(nil, body)
	if n == 0 {
		return nil, unredactable(*first, rules, firstText), fs
	}
	red.MarkRequest()
	return out, nil, fs
}
