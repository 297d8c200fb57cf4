package guardrail

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

func compile(t testing.TB, rules ...RuleSettings) *Policy {
	t.Helper()
	s := Settings{Rules: rules}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	p, err := s.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSettings_ValidateNamesWhatIsWrong(t *testing.T) {
	ok := RuleSettings{Name: "pii", Stage: StageBoth, Action: ActionRedact, Detectors: []Kind{Email}}
	for _, tc := range []struct {
		mod  func(*Settings)
		want string
	}{
		{func(s *Settings) { s.Rules[0].Name = "Bad Name" }, "rules[0].name"},
		{func(s *Settings) { s.Rules = append(s.Rules, s.Rules[0]) }, "used twice"},
		{func(s *Settings) { s.Rules[0].Stage = "later" }, "rules[0].stage"},
		{func(s *Settings) { s.Rules[0].Action = "shout" }, "rules[0].action"},
		{func(s *Settings) { s.Rules[0].Detectors = []Kind{"ssn"} }, `unknown detector "ssn"`},
		{func(s *Settings) { s.Rules[0].Detectors = nil }, "looks for nothing"},
		{func(s *Settings) { s.Rules[0].DenyPatterns = []string{"("} }, "deny_patterns[0] is not a regular expression"},
		{func(s *Settings) { s.Rules[0].DenyPatterns = []string{"a*"} }, "matches empty text"},
		{func(s *Settings) { s.MaxPromptBytes = -1 }, "max_prompt_bytes"},
	} {
		s := Settings{Rules: []RuleSettings{ok}}
		tc.mod(&s)
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", s, err, tc.want)
		}
	}
	s := Settings{Rules: []RuleSettings{ok}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(&s)
	got, p, err := Parse(raw)
	if err != nil || got == nil || len(p.Input) != 1 || len(p.Output) != 1 || p.CacheSafe() {
		t.Fatalf("Parse: %+v %+v %v", got, p, err)
	}
	if _, _, err := Parse(json.RawMessage(`{"rules":[{"name":"x","stage":"input","action":"block"}]}`)); err == nil {
		t.Error("Parse accepted a rule that looks for nothing")
	}
	if _, p, _ := Parse(nil); p != nil {
		t.Error("no settings compiled to a policy")
	}
	blockOnly := compile(t, RuleSettings{Name: "s", Stage: StageInput, Action: ActionBlock, Detectors: []Kind{Secret}})
	if !blockOnly.CacheSafe() {
		t.Error("an input block rule turned the cache off")
	}
}

func TestRequest_RedactsStringValuesNotKeys(t *testing.T) {
	p := compile(t,
		RuleSettings{Name: "pii", Stage: StageBoth, Action: ActionRedact, Detectors: []Kind{Email, Card}},
		RuleSettings{Name: "words", Stage: StageInput, Action: ActionRedact, DenyWords: []string{"content"}})
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"write to jane@example.com, card 4111 1111 1111 1111; content"}]}`)
	texts := []string{"write to jane@example.com, card 4111 1111 1111 1111; content"}
	var red Redactor
	out, block, fs := Request(p.Input, &red, body, texts, nil)
	if block != nil || len(fs) != 3 {
		t.Fatalf("block %+v, findings %+v", block, fs)
	}
	want := `{"model":"m","messages":[{"role":"user","content":"write to «EMAIL_1», card «CARD_1»; «DENY_1»"}]}`
	if string(out) != want {
		t.Fatalf("redacted\n%s\nwant\n%s", out, want)
	}
	// The answer echoes the placeholders: the originals come back.
	answer := []byte(`{"choices":[{"message":{"content":"I mailed «EMAIL_1» and charged «CARD_1»."}}]}`)
	got, block, _ := Answer(p.Output, &red, answer, "I mailed «EMAIL_1» and charged «CARD_1».", nil)
	if block != nil || string(got) != `{"choices":[{"message":{"content":"I mailed jane@example.com and charged 4111 1111 1111 1111."}}]}` {
		t.Fatalf("restored %s (block %+v)", got, block)
	}
	// An escaped value is found where the body spells it.
	esc := []byte(`{"messages":[{"role":"user","content":"jane\u0040example.com"}]}`)
	var red2 Redactor
	out, block, _ = Request(p.Input, &red2, esc, []string{"jane@example.com"}, nil)
	if block != nil || !strings.Contains(string(out), "«EMAIL_1»") || strings.Contains(string(out), "example") {
		t.Fatalf("escaped: %s %+v", out, block)
	}
}

func TestAnswer_BlockNamesRuleNotText(t *testing.T) {
	p := compile(t,
		RuleSettings{Name: "secrets", Stage: StageOutput, Action: ActionBlock, Detectors: []Kind{Secret}},
		RuleSettings{Name: "audit", Stage: StageOutput, Action: ActionLog, Detectors: []Kind{Email}})
	text := "your key is sk-proj-abcdefghijklmnopqrstuvwxyz0123, mail ops@example.com"
	_, block, fs := Answer(p.Output, nil, []byte(`"`+text+`"`), text, nil)
	if block == nil || block.Rule != "secrets" || block.Kind != Secret {
		t.Fatalf("block %+v", block)
	}
	if len(fs) != 2 || fs[1].Action != ActionLog {
		t.Errorf("findings %+v", fs)
	}
}

// feed streams text through a Hold as chunks of step bytes, each chunk a
// JSON event carrying its piece; it returns what was released and the
// block.
func feed(h *Hold, text string, step int) (string, *Finding) {
	var out []byte
	for i := 0; i < len(text); i += step {
		piece := text[i:min(i+step, len(text))]
		ev, _ := json.Marshal(map[string]string{"delta": piece})
		var block *Finding
		out, block = h.Add(out, append(append([]byte("data: "), ev...), "\n\n"...), piece)
		if block != nil {
			return string(out), block
		}
	}
	out, block := h.End(out)
	return string(out), block
}

func deltas(t *testing.T, sse string) string {
	t.Helper()
	var b strings.Builder
	for ev := range strings.SplitSeq(sse, "\n\n") {
		if ev == "" {
			continue
		}
		var v struct{ Delta string }
		if err := json.Unmarshal([]byte(strings.TrimPrefix(ev, "data: ")), &v); err != nil {
			t.Fatalf("event %q: %v", ev, err)
		}
		b.WriteString(v.Delta)
	}
	return b.String()
}

// TestHold_BlockedStreamNeverReleasesTheMatch: a card split over events of
// 1 to 64 bytes is caught, and no digit of it reaches the caller.
func TestHold_BlockedStreamNeverReleasesTheMatch(t *testing.T) {
	p := compile(t, RuleSettings{Name: "cards", Stage: StageOutput, Action: ActionBlock, Detectors: []Kind{Card}})
	text := strings.Repeat("plain words here. ", 30) + "pay with 4111 1111 1111 1111 today" + strings.Repeat(" and more", 20)
	for _, step := range []int{1, 2, 5, 16, 64} {
		h := NewHold(p.Output, nil, 0)
		out, block := feed(h, text, step)
		if block == nil || block.Rule != "cards" {
			t.Fatalf("step %d: not blocked", step)
		}
		got := deltas(t, out)
		if strings.Contains(got, "4111") || !strings.HasPrefix(text, got) || len(got) == 0 {
			t.Errorf("step %d: released %q", step, got)
		}
	}
	// Clean text comes out whole, in order, held back by a bounded window.
	h := NewHold(p.Output, nil, 0)
	clean := strings.Repeat("nothing to see, 12 of them. ", 60)
	out, block := feed(h, clean, 7)
	if block != nil || deltas(t, out) != clean {
		t.Fatalf("clean: %+v %q", block, deltas(t, out))
	}
}

func TestHold_RedactsWithinAnEventBlocksAcross(t *testing.T) {
	p := compile(t, RuleSettings{Name: "pii", Stage: StageOutput, Action: ActionRedact, Detectors: []Kind{Email}})
	text := strings.Repeat("words ", 80) + "write to jane@example.com now " + strings.Repeat("tail ", 80)
	// Word by word: the address is one event.
	var out []byte
	h := NewHold(p.Output, nil, 0)
	for w := range strings.SplitAfterSeq(text, " ") {
		ev, _ := json.Marshal(map[string]string{"delta": w})
		var block *Finding
		if out, block = h.Add(out, append(append([]byte("data: "), ev...), "\n\n"...), w); block != nil {
			t.Fatalf("blocked: %+v", block)
		}
	}
	out, block := h.End(out)
	if block != nil {
		t.Fatal(block)
	}
	if got := deltas(t, string(out)); got != strings.Replace(text, "jane@example.com", "«EMAIL_1»", 1) {
		t.Fatalf("redacted stream %q", got)
	}
	// Split across events: it cannot be rewritten in place, so it blocks.
	h = NewHold(p.Output, nil, 0)
	rel, block := feed(h, text, 3)
	if block == nil || block.Action != ActionBlock || strings.Contains(deltas(t, rel), "jane") {
		t.Fatalf("split: %+v %q", block, deltas(t, rel))
	}
}

func TestHold_RestoresPlaceholders(t *testing.T) {
	var red Redactor
	red.Placeholder(Email, "jane@example.com")
	red.MarkRequest()
	h := NewHold(nil, &red, 0)
	var out []byte
	for _, w := range []string{"I wrote ", "to ", "«EMAIL_1»", " as asked", "."} {
		ev, _ := json.Marshal(map[string]string{"delta": w})
		out, _ = h.Add(out, append(append([]byte("data: "), ev...), "\n\n"...), w)
	}
	out, _ = h.End(out)
	if got := deltas(t, string(out)); got != "I wrote to jane@example.com as asked." {
		t.Fatalf("restored %q", got)
	}
}

// TestHold_WholeWindow: a policy whose output webhook blocks holds a
// streamed answer whole — a window past any answer releases nothing before
// the end, however long the text — and one whose webhook only logs does not.
func TestHold_WholeWindow(t *testing.T) {
	t.Parallel()
	for _, a := range []Action{ActionBlock, ActionLog} {
		s := Settings{Rules: []RuleSettings{{Name: "hook", Stage: StageOutput, Action: a, Webhook: &WebhookSettings{URL: "http://classifier.internal/check"}}}}
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		p, err := s.Compile()
		if err != nil {
			t.Fatal(err)
		}
		if got := p.HoldsWhole(); got != (a == ActionBlock) {
			t.Fatalf("%s: HoldsWhole %v", a, got)
		}
		if p.CacheSafe() {
			t.Errorf("%s: an output webhook leaves the cache on", a)
		}
	}
	h := NewHold(nil, nil, 1<<40)
	var out []byte
	for i := range 200 {
		out, _ = h.Add(out, []byte("event "+strconv.Itoa(i)+"\n"), "some words of the answer ")
	}
	if len(out) != 0 {
		t.Fatalf("released %d bytes before the end", len(out))
	}
	out, f := h.End(out)
	if f != nil || !bytes.HasPrefix(out, []byte("event 0\n")) || !bytes.HasSuffix(out, []byte("event 199\n")) {
		t.Fatalf("end: %v %q", f, out[:min(len(out), 40)])
	}
}
