package translator

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"go.yaml.in/yaml/v3"
)

func validateMessage(t *testing.T, out []byte) {
	t.Helper()
	var m anthropic.Message
	if err := json.Unmarshal(out, &m); err != nil || m.Type != "message" || !strings.HasPrefix(m.ID, "msg_") || m.StopReason == "" {
		t.Errorf("not a message (%v): %s", err, out)
	}
	checkAnthropicContent(t, m.Content)
}

func checkAnthropicContent(t *testing.T, content []anthropic.ContentBlockUnion) {
	t.Helper()
	for _, b := range content {
		switch b.Type {
		case "text":
			if b.Text == "" {
				t.Errorf("an empty text block would be refused when sent back")
			}
		case "tool_use":
			if !strings.HasPrefix(b.ID, "toolu_") || !json.Valid(b.Input) || len(b.Input) == 0 || b.Input[0] != '{' {
				t.Errorf("tool_use %+v", b)
			}
		}
	}
}

func validateMessagesStream(t *testing.T, out []byte) {
	t.Helper()
	evs := sseEvents(t, out)
	if len(evs) == 0 {
		t.Fatal("empty stream")
	}
	var acc anthropic.Message
	stopped, errored := false, false
	for i, ev := range evs {
		var e anthropic.MessageStreamEventUnion
		if err := json.Unmarshal([]byte(ev[1]), &e); err != nil {
			t.Fatalf("event %d: %v: %s", i, err, ev[1])
		}
		if ev[0] != e.Type {
			t.Errorf("event name %q, data type %q", ev[0], e.Type)
		}
		if stopped || errored {
			t.Errorf("an event after the end: %v", ev)
		}
		switch e.Type {
		case "error":
			errored = true
			continue
		case "message_stop":
			stopped = true
		}
		if i == 0 && e.Type != "message_start" {
			t.Errorf("the stream starts with %s", e.Type)
		}
		if err := acc.Accumulate(e); err != nil {
			t.Fatalf("accumulate event %d: %v: %s", i, err, ev[1])
		}
	}
	if !stopped && !errored {
		t.Errorf("the stream ends without message_stop or error")
	}
	if stopped {
		if acc.StopReason == "" {
			t.Errorf("no stop_reason")
		}
		checkAnthropicContent(t, acc.Content)
	}
}

// exchange is one recorded exchange with Anthropic's Messages API.
type exchange struct {
	name     string
	request  []byte
	status   int
	response []byte
}

// cassettes reads the go-vcr recordings beside the repository
// (../shared/reference/anthropic-cassettes): real request bodies and real
// JSON and SSE answers. In a clone without ../shared, reference calls
// t.Skip with a loud message (and fails instead when CI is set).
func cassettes(t *testing.T) []exchange {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(reference(t, "anthropic-cassettes"), "*.yaml"))
	if len(files) == 0 {
		t.Fatal("no Anthropic cassettes")
	}
	var out []exchange
	for _, f := range files {
		var c struct {
			Interactions []struct {
				Request struct {
					Body string `yaml:"body"`
				} `yaml:"request"`
				Response struct {
					Body string `yaml:"body"`
					Code int    `yaml:"code"`
				} `yaml:"response"`
			} `yaml:"interactions"`
		}
		if err := yaml.Unmarshal(readFile(t, f), &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for i, in := range c.Interactions {
			out = append(out, exchange{
				name:    strings.TrimSuffix(filepath.Base(f), ".yaml") + "#" + string(rune('0'+i)),
				request: []byte(in.Request.Body), status: in.Response.Code, response: []byte(in.Response.Body),
			})
		}
	}
	return out
}
