package guardrail

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestScanAt_MatchesScan: a window sliding over a text, growing at its end
// and cut at its start, finds through a Memo exactly what Scan finds.
func TestScanAt_MatchesScan(t *testing.T) {
	ds := all(t)
	text := strings.Repeat("Mail jane@example.com or call +44 20 7946 0958; card 4111 1111 1111 1111, IBAN GB82 WEST 1234 5698 7654 32, id 12345678Z, key sk-proj-abcdefghijklmnopqrstuvwxyz0123. ", 6)
	r := rand.New(rand.NewPCG(7, 7))
	var m Memo
	lo, hi := 0, 0
	for hi < len(text) {
		hi = min(hi+1+r.IntN(24), len(text))
		if hi-lo > 300 {
			lo = hi - 300 + r.IntN(40)
		}
		got, want := ScanAt(ds, text[lo:hi], lo, &m), Scan(ds, text[lo:hi])
		if !slices.Equal(got, want) {
			t.Fatalf("[%d, %d): memo %+v, scan %+v", lo, hi, got, want)
		}
	}
}

// holdPair feeds the same events to a Hold with memos and one without,
// and fails when they release or find anything different.
func holdPair(t *testing.T, rules []Rule, text string, steps []int) {
	t.Helper()
	memo, plain := NewHold(rules, nil, 0), NewHold(rules, nil, 0)
	plain.memo = nil
	var a, b []byte
	for i, k := 0, 0; i < len(text); k++ {
		n := min(steps[k%len(steps)], len(text)-i)
		ev := []byte("data: " + text[i:i+n] + "\n\n")
		var fa, fb *Finding
		a, fa = memo.Add(a, ev, text[i:i+n])
		b, fb = plain.Add(b, ev, text[i:i+n])
		if !bytes.Equal(a, b) || (fa == nil) != (fb == nil) || fa != nil && *fa != *fb {
			t.Fatalf("after %d bytes: memo released %q (%+v), plain %q (%+v)", i+n, a, fa, b, fb)
		}
		i += n
	}
	a, fa := memo.End(a)
	b, fb := plain.End(b)
	if !bytes.Equal(a, b) || (fa == nil) != (fb == nil) || fa != nil && *fa != *fb || !slices.Equal(memo.Findings(), plain.Findings()) {
		t.Fatalf("at the end: memo %q (%+v, %+v), plain %q (%+v, %+v)", a, fa, memo.Findings(), b, fb, plain.Findings())
	}
}

func memoRules(t testing.TB) []Rule {
	var out []Rule
	for _, rs := range []RuleSettings{
		{Name: "pii", Stage: StageOutput, Action: ActionRedact, Detectors: []Kind{Email, Phone, NationalID}},
		{Name: "money", Stage: StageOutput, Action: ActionLog, Detectors: []Kind{Card, IBAN}},
		{Name: "secrets", Stage: StageOutput, Action: ActionBlock, Detectors: []Kind{Secret}},
	} {
		out = append(out, compile(t, rs).Output...)
	}
	return out
}

// TestHold_MemoChangesNothing: a Hold whose scans remember their windows
// releases and finds what one that scans afresh each time does.
func TestHold_MemoChangesNothing(t *testing.T) {
	rules := memoRules(t)
	text := strings.Repeat("Write to jane@example.com, call +44 20 7946 0958, pay 4111 1111 1111 1111 from GB82 WEST 1234 5698 7654 32 as 12345678Z. ", 8)
	for _, steps := range [][]int{{1}, {3}, {16}, {7, 1, 40}, {300}} {
		holdPair(t, rules, text, steps)
	}
	holdPair(t, rules, text+" then sk-proj-abcdefghijklmnopqrstuvwxyz0123 and more", []int{5})
}

// FuzzHoldMemo holds a Hold with memos to one without on any text and
// any event sizes.
func FuzzHoldMemo(f *testing.F) {
	for _, s := range []string{"jane@example.com 4111 1111 1111 1111", "+44 20 7946 0958 and 12345678Z", "GB82 WEST 1234 5698 7654 32", ""} {
		f.Add(strings.Repeat(s+" words ", 20), uint8(5), uint8(17))
	}
	rules := memoRules(f)
	f.Fuzz(func(t *testing.T, text string, a, b uint8) {
		holdPair(t, rules, text, []int{int(a%64) + 1, int(b%64) + 1})
	})
}

// BenchmarkHold is the proxy's check of a streamed answer: 4 KB of prose
// with figures and addresses in 16-byte events through three output rules
// (redact, log, block) over every built-in detector; plain is the same
// without memos, every event scanning the whole held window afresh.
func BenchmarkHold(b *testing.B) {
	rules := memoRules(b)
	text := strings.Repeat("The Q3 report (page 12) is attached; write to ops@example.com by 2026-10-01. ", 60)[:4096]
	const event = 16
	for _, memo := range []bool{true, false} {
		name := "memo"
		if !memo {
			name = "plain"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			var out []byte
			for b.Loop() {
				h := NewHold(rules, nil, 0)
				if !memo {
					h.memo = nil
				}
				out = out[:0]
				for i := 0; i < len(text); i += event {
					out, _ = h.Add(out, []byte(text[i:i+event]), text[i:i+event])
				}
				out, _ = h.End(out)
			}
		})
	}
}
