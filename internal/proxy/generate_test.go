package proxy_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/relay-llm/relay/internal/pricing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// /v1/generate end to end: every binding shape on the mock upstream, with
// X-Relay-Usage: full, every body and every stream event's data validated
// against openapi/inference.yaml, the cost checked against the pricing
// arithmetic of the usage Relay recorded.

var (
	inferenceOnce sync.Once
	inferenceDoc  *openapi3.T
	inferenceErr  error
)

// inferenceSpec loads and validates openapi/inference.yaml once.
func inferenceSpec(t *testing.T) *openapi3.T {
	t.Helper()
	inferenceOnce.Do(func() {
		l := openapi3.NewLoader()
		inferenceDoc, inferenceErr = l.LoadFromFile("../../openapi/inference.yaml")
		if inferenceErr == nil {
			inferenceErr = inferenceDoc.Validate(l.Context)
		}
	})
	if inferenceErr != nil {
		t.Fatalf("openapi/inference.yaml: %v", inferenceErr)
	}
	return inferenceDoc
}

// conforms fails unless data is valid JSON for the named schema.
func conforms(t *testing.T, schema string, data []byte) {
	t.Helper()
	s := inferenceSpec(t).Components.Schemas[schema]
	if s == nil {
		t.Fatalf("no schema %s", schema)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: not JSON: %s", schema, data)
	}
	if err := s.Value.VisitJSON(v); err != nil {
		t.Errorf("%s does not conform: %v\n%s", schema, err, data)
	}
}

// pricedFixture is translatedFixture with prices (and a long-context tier)
// on every binding.
func pricedFixture(t *testing.T) *generateFixture {
	f := newFixture(t)
	g := &generateFixture{fixture: f, prices: map[string]*snapshot.Pricing{}}
	for _, shape := range []wire.Shape{wire.ShapeAnthropic, wire.ShapeGemini, wire.ShapeOpenAIResponses, wire.ShapeOpenAI} {
		h := f.host("h-" + strings.ReplaceAll(string(shape), "_", "-"))
		secret := openaiSecret
		switch shape {
		case wire.ShapeAnthropic:
			secret = anthropicSecret
		case wire.ShapeGemini:
			secret = geminiSecret
		}
		f.key(h, "k-"+string(shape), secret+"-"+string(shape))
		up := upstreamNames[shape]
		for _, v := range []struct{ suffix, upstream string }{{"", "-cached-cache-write"}, {"-parallel", "-parallel"}, {"-thinking", "-thinking"}} {
			b := f.bind(f.model(string(shape)+v.suffix, true), h, shape, up+v.upstream)
			b.Pricing = snapshot.Pricing{Input: 2_500_000, CachedInput: 250_000, CacheWrite: 3_125_000, Output: 10_000_000, Reasoning: 10_000_000,
				Tiers: []snapshot.PriceTier{{AboveInputTokens: 1_000_000, InputPrice: 5_000_000, OutputPrice: 20_000_000}}}
			g.prices[string(shape)+v.suffix] = &b.Pricing
		}
	}
	for _, m := range f.data.Models {
		m.MaxOutputTokens = 8192
	}
	f.start()
	return g
}

type generateFixture struct {
	*fixture
	prices map[string]*snapshot.Pricing
}

type genUsage struct {
	Input      int64  `json:"input_tokens"`
	Output     int64  `json:"output_tokens"`
	Total      int64  `json:"total_tokens"`
	CacheRead  int64  `json:"cache_read_tokens"`
	CacheWrite int64  `json:"cache_write_tokens"`
	Reasoning  int64  `json:"reasoning_tokens"`
	Cost       *int64 `json:"cost_nanos"`
}

func (u genUsage) wire() wire.Usage {
	return wire.Usage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite, Reasoning: u.Reasoning}
}

const genTools = `"tools":[{"name":"get_weather","description":"Weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string"},"units":{"type":"string","enum":["c","f"]}},"required":["city","units"]}},{"name":"get_time","parameters":{"type":"object","properties":{"zone":{"type":"string"}},"required":["zone"]}}]`

func TestGenerate_EveryShape(t *testing.T) {
	t.Parallel()
	f := pricedFixture(t)
	full := map[string]string{"X-Relay-Usage": "full"}
	for _, shape := range []wire.Shape{wire.ShapeOpenAI, wire.ShapeOpenAIResponses, wire.ShapeAnthropic, wire.ShapeGemini} {
		model := string(shape)
		up := upstreamNames[shape]
		t.Run(model+"/text", func(t *testing.T) {
			resp, body := f.post("/v1/generate", `{"model":"`+model+`","system":"Be brief.","messages":[{"role":"user","content":"Hello there, relay friend"}]}`, full)
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			conforms(t, "GenerateResponse", []byte(body))
			var g struct {
				Object  string `json:"object"`
				Content []struct{ Type, Text string }
				Finish  string   `json:"finish_reason"`
				Usage   genUsage `json:"usage"`
			}
			_ = json.Unmarshal([]byte(body), &g)
			if g.Object != "generation" || len(g.Content) != 1 || !strings.HasPrefix(g.Content[0].Text, "Hello from "+up) || g.Finish != "stop" {
				t.Errorf("generation %s", body)
			}
			rec := f.rec.next(t)
			if rec.Inbound != "relay_generate" || rec.Upstream != shape || rec.Usage != g.Usage.wire() || rec.Usage.Input == 0 || rec.Usage.CacheRead == 0 {
				t.Errorf("recorded %+v, caller saw %+v", rec, g.Usage)
			}
			if want := pricing.Cost(f.prices[model], rec.Usage); g.Usage.Cost == nil || *g.Usage.Cost != want || want == 0 {
				t.Errorf("cost %v, want %d nano", g.Usage.Cost, want)
			}
		})
		t.Run(model+"/stream_tools", func(t *testing.T) {
			resp, body := f.post("/v1/generate", `{"model":"`+model+`-parallel","stream":true,"messages":[{"role":"user","content":"Weather and time in Paris?"}],`+genTools+`}`, full)
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			evs := streamEvents(t, body)
			calls, last := 0, evs[len(evs)-1]
			for _, ev := range evs {
				conforms(t, "GenerateStreamEvent", []byte(ev[1]))
				if ev[0] == "part_start" && strings.Contains(ev[1], `"type":"tool_call"`) {
					calls++
				}
			}
			if calls != 2 || last[0] != "end" || !strings.Contains(last[1], `"finish_reason":"tool_calls"`) {
				t.Errorf("%d calls, last %v\n%s", calls, last, body)
			}
			var end struct {
				Usage genUsage `json:"usage"`
			}
			_ = json.Unmarshal([]byte(last[1]), &end)
			rec := f.rec.next(t)
			if rec.Usage != end.Usage.wire() || rec.Usage.Output == 0 || !rec.Stream {
				t.Errorf("recorded %+v, end event %+v", rec, end.Usage)
			}
			if want := pricing.Cost(f.prices[model+"-parallel"], rec.Usage); end.Usage.Cost == nil || *end.Usage.Cost != want {
				t.Errorf("cost %v, want %d", end.Usage.Cost, want)
			}
		})
		t.Run(model+"/no_cost_without_header", func(t *testing.T) {
			resp, body := f.post("/v1/generate", `{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`, nil)
			if resp.StatusCode != 200 || strings.Contains(body, "cost_nanos") || !strings.Contains(body, "event: end\n") {
				t.Errorf("%d %s", resp.StatusCode, body)
			}
			for _, ev := range streamEvents(t, body) {
				conforms(t, "GenerateStreamEvent", []byte(ev[1]))
			}
			f.rec.next(t)
		})
		t.Run(model+"/upstream_error", func(t *testing.T) {
			resp, body := f.post("/v1/generate", `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`, map[string]string{testFault: "400"})
			if resp.StatusCode != 400 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			conforms(t, "ErrorResponse", []byte(body))
			f.rec.next(t)
		})
		for _, c := range []struct{ fault, code string }{
			{"midstream-3", ""},               // the upstream's own error event, its code
			{"reset-3", wire.StreamErrorCode}, // the connection broke: Relay's error event
		} {
			t.Run(model+"/"+c.fault, func(t *testing.T) {
				resp, body := f.post("/v1/generate", `{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"Hello there, relay friend"}]}`, map[string]string{testFault: c.fault})
				if resp.StatusCode != 200 {
					t.Fatalf("%d %s", resp.StatusCode, body)
				}
				evs := streamEvents(t, body)
				for _, ev := range evs {
					conforms(t, "GenerateStreamEvent", []byte(ev[1]))
				}
				last := evs[len(evs)-1]
				var e struct {
					Error struct{ Code, Message string }
				}
				_ = json.Unmarshal([]byte(last[1]), &e)
				if last[0] != "error" || e.Error.Message == "" || c.code != "" && e.Error.Code != c.code || len(evs) < 2 || evs[0][0] != "start" {
					t.Errorf("events %v", evs)
				}
				if rec := f.rec.next(t); rec.ErrorKind != "upstream_stream_error" {
					t.Errorf("recorded %+v", rec)
				}
			})
		}
	}
}

// Relay's own errors on /v1/generate are its OpenAI-style error bodies,
// and conform to the spec.
func TestGenerate_Errors(t *testing.T) {
	t.Parallel()
	f := pricedFixture(t)
	for _, tt := range []struct {
		name, body string
		header     map[string]string
		status     int
		code       string
	}{
		{"no key", `{"model":"openai","messages":[{"role":"user","content":"hi"}]}`, map[string]string{"Authorization": ""}, 401, "missing_api_key"},
		{"malformed", `{"model":"openai","messages":[{"role":"bot","content":"hi"}]}`, nil, 400, "invalid_request"},
		{"unknown field", `{"model":"openai","messages":[{"role":"user","content":"hi"}],"n":2}`, nil, 400, "invalid_request"},
		{"unknown model", `{"model":"nope","messages":[{"role":"user","content":"hi"}]}`, nil, 404, "model_not_found"},
		{"rejected feature", `{"model":"gemini","messages":[{"role":"user","content":"hi"}],"parallel_tool_calls":false,` + genTools + `}`, map[string]string{"X-Relay-Strict": "true"}, 400, "unsupported_feature"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := f.post("/v1/generate", tt.body, tt.header)
			e := decodeError(t, body)
			if resp.StatusCode != tt.status || e.Error.Code != tt.code || resp.Header.Get("X-Relay-Request-ID") == "" {
				t.Errorf("%d %s", resp.StatusCode, body)
			}
			conforms(t, "ErrorResponse", []byte(body))
		})
	}
	if resp, body := f.do(http.MethodGet, "/v1/generate", "", nil); resp.StatusCode != 405 {
		t.Errorf("GET: %d %s", resp.StatusCode, body)
	}
}

// streamEvents splits an SSE body into (event name, data).
func streamEvents(t *testing.T, body string) [][2]string {
	t.Helper()
	r := wire.NewEventReader(bytes.NewReader([]byte(body)), nil, 1<<20)
	var evs [][2]string
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		evs = append(evs, [2]string{string(ev.Name), string(ev.Data)})
	}
	if len(evs) == 0 {
		t.Fatalf("no events in %q", body)
	}
	return evs
}
