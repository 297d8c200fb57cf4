package main

import (
	"net"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/demo"
)

// countingWriter counts the writes it is given.
type countingWriter struct {
	strings.Builder
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Builder.Write(p)
}

// TestWelcome_ListsEveryDemoModelInOneWrite: the banner is one write (so
// no log line lands inside it), names every demo model, Gemini's included,
// with the base URL its SDK takes, and says where the demo key is kept.
func TestWelcome_ListsEveryDemoModelInOneWrite(t *testing.T) {
	in := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	ctl := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8081}
	var w countingWriter
	printWelcome(&w, in, ctl, "sk-wr-demo", "/data/demo-relay-key")
	out := w.String()
	if w.writes != 1 {
		t.Errorf("the banner took %d writes, want 1", w.writes)
	}
	for _, m := range demo.MockModels() {
		if !strings.Contains(out, m.Name) {
			t.Errorf("the banner does not name %s:\n%s", m.Name, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "demo-gemini") && (!strings.Contains(line, "Gemini SDK") || !strings.HasSuffix(line, " http://127.0.0.1:8080")) {
			t.Errorf("demo-gemini's line lacks the Gemini SDK's base URL: %q", line)
		}
	}
	for _, want := range []string{"http://127.0.0.1:8080/v1", "/data/demo-relay-key): sk-wr-demo"} {
		if !strings.Contains(out, want) {
			t.Errorf("the banner lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "stored only as a hash") {
		t.Errorf("the banner says the key is stored only as a hash while a copy is kept:\n%s", out)
	}
	if !keyLine.MatchString(out) || !upLine.MatchString(out) {
		t.Errorf("the banner no longer matches what the serve tests read:\n%s", out)
	}
}
