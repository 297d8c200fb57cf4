package guardrail

import (
	"strings"
	"testing"
)

func all(t testing.TB) []Detector {
	var ds []Detector
	for _, k := range Builtins {
		d, ok := Builtin(k)
		if !ok {
			t.Fatalf("no detector for %s", k)
		}
		ds = append(ds, d)
	}
	return ds
}

func TestScan_FindsEachBuiltinKind(t *testing.T) {
	ds := all(t)
	for _, tc := range []struct {
		text string
		kind Kind
		want string
	}{
		{"write to jane.doe+x@example.co.uk today", Email, "jane.doe+x@example.co.uk"},
		{"card 4111 1111 1111 1111 exp", Card, "4111 1111 1111 1111"},
		{"card 4111-1111-1111-1111", Card, "4111-1111-1111-1111"},
		{"iban GB82 WEST 1234 5698 7654 32 please", IBAN, "GB82 WEST 1234 5698 7654 32"},
		{"iban DE89370400440532013000.", IBAN, "DE89370400440532013000"},
		{"dni 12345678Z here", NationalID, "12345678Z"},
		{"nie X1234567L here", NationalID, "X1234567L"},
		{"call +44 20 7946 0958 now", Phone, "+44 20 7946 0958"},
		{"call (555) 123-4567", Phone, "(555) 123-4567"},
		{"key sk-proj-abcdefghijklmnopqrstuvwxyz0123 ok", Secret, "sk-proj-abcdefghijklmnopqrstuvwxyz0123"},
		{"key sk-ant-api03-abcdefghijklmnopqrstuvwxyz ok", Secret, "sk-ant-api03-abcdefghijklmnopqrstuvwxyz"},
		{"aws AKIAIOSFODNN7EXAMPLE", Secret, "AKIAIOSFODNN7EXAMPLE"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIE", Secret, "-----BEGIN RSA PRIVATE KEY-----"},
		{"tok eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", Secret,
			"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"},
	} {
		ms := Scan(ds, tc.text)
		if len(ms) != 1 || ms[0].Kind != tc.kind || tc.text[ms[0].Start:ms[0].End] != tc.want {
			t.Errorf("%q: %+v, want one %s %q", tc.text, ms, tc.kind, tc.want)
		}
	}
}

func TestScan_ChecksumsRefuseLookalikes(t *testing.T) {
	ds := all(t)
	for _, text := range []string{
		"order 4111 1111 1111 1112",        // Luhn fails
		"iban GB82 WEST 1234 5698 7654 33", // mod-97 fails
		"dni 12345678A",                    // wrong letter
		"version 1.2.3 and 2026",           // not a phone
		"hello world",
	} {
		if ms := Scan(ds, text); len(ms) != 0 {
			t.Errorf("%q: %+v, want none", text, ms)
		}
	}
}

func TestDenyList(t *testing.T) {
	d, err := DenyList([]string{"Project Falcon"}, []string{`ticket-\d{4}`})
	if err != nil {
		t.Fatal(err)
	}
	ms := Scan([]Detector{d}, "about project falcon and TICKET-1 and ticket-1234; falconry")
	if len(ms) != 2 {
		t.Fatalf("%+v", ms)
	}
	if _, err := DenyList(nil, []string{"("}); err == nil {
		t.Error("an invalid expression was accepted")
	}
}

func TestRedactor_RoundTrip(t *testing.T) {
	ds := all(t)
	prompt := "Mail jane@example.com and jane@example.com, card 4111111111111111."
	var r Redactor
	red := r.Redact(prompt, Scan(ds, prompt))
	if strings.Contains(red, "jane@") || strings.Contains(red, "4111") {
		t.Fatalf("redacted prompt holds the values: %q", red)
	}
	if want := "Mail «EMAIL_1» and «EMAIL_1», card «CARD_1»."; red != want {
		t.Errorf("redacted %q, want %q", red, want)
	}
	answer := "I wrote to «EMAIL_1» and charged «CARD_1»; «PHONE_9» is not mine."
	if got, want := r.Restore(answer), "I wrote to jane@example.com and charged 4111111111111111; «PHONE_9» is not mine."; got != want {
		t.Errorf("restored %q, want %q", got, want)
	}
}

// TestStream_BlocksTextSplitAcrossEvents: a secret streamed a few bytes
// at a time is never released in part.
func TestStream_BlocksTextSplitAcrossEvents(t *testing.T) {
	ds := all(t)
	text := strings.Repeat("harmless words ", 40) + "the key is sk-proj-abcdefghijklmnopqrstuvwxyz0123 and more " + strings.Repeat("tail ", 10)
	secret := "sk-proj-abcdefghijklmnopqrstuvwxyz0123"
	for _, step := range []int{1, 3, 7, 64} {
		s := NewStream(ds, 0)
		var out strings.Builder
		var blocked *Match
		for i := 0; i < len(text) && blocked == nil; i += step {
			rel, b := s.Write(text[i:min(i+step, len(text))])
			out.WriteString(rel)
			blocked = b
		}
		if blocked == nil {
			rel, b := s.Flush()
			out.WriteString(rel)
			blocked = b
		}
		if blocked == nil || blocked.Kind != Secret {
			t.Errorf("step %d: not blocked", step)
		}
		for n := 4; n <= len(secret); n++ {
			if strings.Contains(out.String(), secret[:n]) {
				t.Fatalf("step %d: %d bytes of the secret were released", step, n)
			}
		}
		if s.Held() > len(text) || out.Len() == 0 {
			t.Errorf("step %d: released %d bytes", step, out.Len())
		}
	}
	// Clean text all comes out, in order.
	s := NewStream(ds, 0)
	clean := strings.Repeat("nothing to see here. ", 50)
	var out strings.Builder
	for i := 0; i < len(clean); i += 5 {
		rel, b := s.Write(clean[i:min(i+5, len(clean))])
		if b != nil {
			t.Fatalf("blocked clean text: %+v", b)
		}
		out.WriteString(rel)
		if s.Held() > MaxMatch+5 {
			t.Fatalf("held %d bytes", s.Held())
		}
	}
	rel, _ := s.Flush()
	if out.String()+rel != clean {
		t.Error("clean text did not come out whole")
	}
}

func FuzzScan(f *testing.F) {
	for _, s := range []string{"jane@example.com", "4111 1111 1111 1111", "GB82 WEST 1234 5698 7654 32", "12345678Z",
		"+44 20 7946 0958", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "-----BEGIN PRIVATE KEY-----", "«EMAIL_1»", "\xff\xfe@a.io", ""} {
		f.Add(s)
	}
	ds := all(f)
	f.Fuzz(func(t *testing.T, text string) {
		ms := Scan(ds, text)
		end := 0
		for _, m := range ms {
			if m.Start < end || m.End > len(text) || m.Start >= m.End {
				t.Fatalf("bad match %+v in %q", m, text)
			}
			end = m.End
		}
		var r Redactor
		red := r.Redact(text, ms)
		if len(ms) > 0 && r.Restore(red) != text && !strings.Contains(text, open) {
			t.Fatalf("round trip of %q: %q", text, r.Restore(red))
		}
		s := NewStream(ds, 0)
		var out strings.Builder
		blocked := false
		for i := 0; i < len(text) && !blocked; i += 3 {
			rel, b := s.Write(text[i:min(i+3, len(text))])
			out.WriteString(rel)
			blocked = b != nil
		}
		if !blocked {
			rel, b := s.Flush()
			out.WriteString(rel)
			blocked = b != nil
		}
		if !blocked && out.String() != text {
			t.Fatalf("stream changed clean text %q to %q", text, out.String())
		}
	})
}

// BenchmarkScan is the guardrails' CPU per KB of text (b.SetBytes).
func BenchmarkScan(b *testing.B) {
	ds := all(b)
	// Prose with figures and an address in it: every detector runs.
	text := strings.Repeat("The Q3 report (page 12) is attached; write to ops@example.com by 2026-10-01. ", 14)[:1024]
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Scan(ds, text)
	}
}

// BenchmarkStream is a streamed answer of 4 KB in 16-byte events. It
// also reports the hold-back: held-B is the text held when an event has
// been written (averaged over the events after the first window), and
// events-behind how many events later a byte is released. The latency a
// caller sees is events-behind times the model's time between events.
func BenchmarkStream(b *testing.B) {
	ds := all(b)
	text := strings.Repeat("The Q3 report (page 12) is attached; write to ops by 2026-10-01. ", 70)[:4096]
	const event = 16
	b.SetBytes(int64(len(text)))
	var held, events int
	for b.Loop() {
		s := NewStream(ds, 0)
		held, events = 0, 0
		for i := 0; i < len(text); i += event {
			s.Write(text[i : i+event])
			if i >= MaxMatch {
				held += s.Held()
				events++
			}
		}
		s.Flush()
	}
	b.ReportMetric(float64(held)/float64(events), "held-B")
	b.ReportMetric(float64(held)/float64(events)/event, "events-behind")
}
