package proxy_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/wire"
)

// A caller's route hint in metadata.relay_route is Relay's: it routes the
// request and never goes upstream, on every inbound shape, passthrough or
// translated; the caller's other metadata members go as they came (byte
// for byte on the passthrough path).
func TestHint_NeverGoesUpstream(t *testing.T) {
	t.Parallel()
	f := translatedFixture(t)
	const other = `"trace" :  "a\u00e9 b"` // odd spacing and an escape: kept as sent
	type inbound struct {
		name, path string
		native     wire.Shape
		body       func(model, meta, mark string) string
		header     map[string]string
	}
	inbounds := []inbound{
		{"chat", "/v1/chat/completions", wire.ShapeOpenAI, func(model, meta, mark string) string {
			return `{"model":"` + model + `","metadata":` + meta + `,"messages":[{"role":"user","content":"` + mark + `"}]}`
		}, nil},
		{"responses", "/v1/responses", wire.ShapeOpenAIResponses, func(model, meta, mark string) string {
			return `{"metadata":` + meta + `,"model":"` + model + `","input":"` + mark + `"}`
		}, nil},
		{"messages", "/v1/messages", wire.ShapeAnthropic, func(model, meta, mark string) string {
			return `{"model":"` + model + `","max_tokens":64,"messages":[{"role":"user","content":"` + mark + `"}],"metadata":` + meta + `}`
		}, nil},
		{"generate", "/v1/generate", "", func(model, meta, mark string) string {
			return `{"model":"` + model + `","messages":[{"role":"user","content":"` + mark + `"}],"metadata":` + meta + `}`
		}, nil},
		{"gemini", "/v1beta/models/{model}:generateContent", wire.ShapeGemini, func(_, meta, mark string) string {
			return `{"contents":[{"role":"user","parts":[{"text":"` + mark + `"}]}],"metadata":` + meta + `}`
		}, goog},
	}
	n := 0
	for _, in := range inbounds {
		for _, shape := range shapes {
			for _, keep := range []bool{true, false} {
				if keep && (in.name == "gemini" || in.name == "messages" && shape != wire.ShapeAnthropic) {
					continue // no metadata besides the hint in these shapes
				}
				meta, kept := `{"relay_route":"cost=min"}`, ""
				if keep {
					meta, kept = `{ `+other+`, "relay_route" : "cost=min" }`, `{ `+other+` }`
					if in.name == "messages" {
						meta, kept = `{"relay_route":"cost=min","user_id":"u-1"}`, `{"user_id":"u-1"}`
					}
				}
				n++
				mark := fmt.Sprintf("hint-case-%d", n)
				model := string(shape)
				t.Run(fmt.Sprintf("%s/%s/keep=%v", in.name, shape, keep), func(t *testing.T) {
					resp, body := f.post(strings.Replace(in.path, "{model}", model, 1), in.body(model, meta, mark), in.header)
					if resp.StatusCode != 200 {
						t.Fatalf("%d %s", resp.StatusCode, body)
					}
					if r := routeOf(t, resp.Header.Get("X-Relay-Route")); r["hint"] != "cost=min" {
						t.Errorf("X-Relay-Route %q: the hint was not read", resp.Header.Get("X-Relay-Route"))
					}
					if d := resp.Header.Get("X-Relay-Dropped-Fields"); strings.Contains(d, "metadata") && !keep {
						t.Errorf("X-Relay-Dropped-Fields %q: the hint counts as the caller's metadata", d)
					}
					up := f.waitFor(func(r mockupstream.Request) bool { return strings.Contains(string(r.Body), mark) })
					if strings.Contains(string(up.Body), "relay_route") {
						t.Fatalf("the upstream got the hint: %s", up.Body)
					}
					if shape == in.native { // passthrough: only the cut (and the model) differ
						want := strings.Replace(in.body(model, kept, mark), `"model":"`+model+`"`, `"model":"`+upstreamNames[shape]+`-cached-cache-write"`, 1)
						if kept == "" {
							want = strings.Replace(in.body(model, "", mark), `,"metadata":`, "", 1)
							want = strings.Replace(want, `{"metadata":,`, "{", 1)
							want = strings.Replace(want, `"model":"`+model+`"`, `"model":"`+upstreamNames[shape]+`-cached-cache-write"`, 1)
						}
						if string(up.Body) != want {
							t.Fatalf("upstream body\n%s\nwant\n%s", up.Body, want)
						}
						return
					}
					var got struct {
						Metadata map[string]string `json:"metadata"`
					}
					if err := json.Unmarshal(up.Body, &got); err != nil {
						t.Fatalf("upstream body %s: %v", up.Body, err)
					}
					if keep && in.name != "messages" && (shape == wire.ShapeOpenAI || shape == wire.ShapeOpenAIResponses) {
						if len(got.Metadata) != 1 || got.Metadata["trace"] != "a\u00e9 b" {
							t.Errorf("upstream metadata %v, want the caller's trace", got.Metadata)
						}
					} else if len(got.Metadata) > 0 && shape != wire.ShapeAnthropic {
						t.Errorf("upstream metadata %v, want none", got.Metadata)
					}
				})
			}
		}
	}
}

// A hint the body carries twice is refused, like every member Relay
// decides on: the upstream would read one and Relay might route on the other.
func TestHint_DuplicateRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	f.start()
	resp, body := f.post("/v1/chat/completions", `{"model":"gpt-test","metadata":{"relay_route":"cost=min","relay_route":"quality=max"},"messages":[{"role":"user","content":"hi"}]}`, nil)
	if e := decodeError(t, body); resp.StatusCode != 400 || e.Error.Param == nil || *e.Error.Param != "metadata.relay_route" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("%d upstream requests", n)
	}
}
