package proxy_test

import (
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

const (
	callerTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpanID  = "00f067aa0ba902b7"
	prompt        = "purple-elephant-prompt-text"
)

// TestProxy_TracesAFailover checks the span tree of a request whose first
// key fails: it continues the caller's trace, has one attempt span per
// attempt whose context went upstream, and no secret or content in any
// attribute.
func TestProxy_TracesAFailover(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		f := newFixture(t)
		f.cfg.TracerProvider = tp
		h := f.host("openai", func(h *snapshot.Host) { h.Provider = "openai" })
		bad := f.key(h, "bad", "sk-up-fault-500-first-key")
		good := f.key(h, "good", "sk-up-good-second-key")
		f.bind(f.model("gpt-test", true), h, wire.ShapeOpenAI, "gpt-4o-mini")
		f.start()

		body := `{"model":"gpt-test","messages":[{"role":"user","content":"` + prompt + `"}]}`
		if stream {
			body = `{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"` + prompt + `"}]}`
		}
		resp, out := f.post("/v1/chat/completions", body, map[string]string{
			"Traceparent":  "00-" + callerTraceID + "-" + callerSpanID + "-01",
			"X-Request-ID": "req-traced-1",
		})
		if resp.StatusCode != 200 || resp.Header.Get("X-Relay-Attempts") != "2" {
			t.Fatalf("stream=%v: %d %s", stream, resp.StatusCode, out)
		}
		f.rec.next(t) // the record goes out after the request span ended

		spans := exp.GetSpans()
		byName := map[string][]tracetest.SpanStub{}
		for _, s := range spans {
			byName[s.Name] = append(byName[s.Name], s)
			if s.SpanContext.TraceID().String() != callerTraceID {
				t.Errorf("%s is in trace %s, not the caller's", s.Name, s.SpanContext.TraceID())
			}
			for _, a := range s.Attributes {
				v := a.Value.String()
				for _, sec := range f.secrets {
					if strings.Contains(v, sec) {
						t.Errorf("%s: attribute %s holds the secret %q", s.Name, a.Key, sec)
					}
				}
				if strings.Contains(v, prompt) || strings.Contains(v, "Hello") {
					t.Errorf("%s: attribute %s holds content: %q", s.Name, a.Key, v)
				}
			}
		}
		one := func(name string) tracetest.SpanStub {
			t.Helper()
			if len(byName[name]) != 1 {
				t.Fatalf("stream=%v: %d %s spans; all: %v", stream, len(byName[name]), name, names(spans))
			}
			return byName[name][0]
		}
		root := one("relay.request")
		if root.SpanKind != trace.SpanKindServer || root.Parent.SpanID().String() != callerSpanID || !root.Parent.IsRemote() {
			t.Errorf("relay.request: kind %v parent %v", root.SpanKind, root.Parent.SpanID())
		}
		attrs := attrMap(root)
		for k, want := range map[string]string{
			"relay.client_request_id": "req-traced-1", "relay.model": "gpt-test", "relay.inbound": "openai_chat",
			"http.response.status_code": "200", "relay.attempts": "2", "relay.host": "openai",
			// The OpenTelemetry GenAI conventions, next to Relay's own.
			"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
			"gen_ai.request.model": "gpt-test", "gen_ai.response.model": "gpt-4o-mini",
		} {
			if attrs[k] != want {
				t.Errorf("relay.request %s = %q, want %q (all: %v)", k, attrs[k], want, attrs)
			}
		}
		if attrs["gen_ai.usage.input_tokens"] == "" || attrs["gen_ai.usage.input_tokens"] == "0" || attrs["gen_ai.usage.output_tokens"] == "" {
			t.Errorf("relay.request has no GenAI usage: %v", attrs)
		}
		for _, name := range []string{"relay.auth", "relay.route", "relay.reserve"} {
			if s := one(name); s.Parent.SpanID() != root.SpanContext.SpanID() {
				t.Errorf("%s is not a child of relay.request", name)
			}
		}
		if a := attrMap(one("relay.route")); a["relay.route.candidates"] != "1" || a["relay.route.kept"] != "1" {
			t.Errorf("relay.route attributes %v", a)
		}
		attempts := byName["relay.upstream_attempt"]
		if len(attempts) != 2 {
			t.Fatalf("%d attempt spans", len(attempts))
		}
		if attempts[0].StartTime.After(attempts[1].StartTime) {
			attempts[0], attempts[1] = attempts[1], attempts[0]
		}
		for i, want := range []struct {
			key    *snapshot.HostKey
			status string
			kind   string
		}{{bad, "500", "500"}, {good, "200", ""}} {
			s := attempts[i]
			a := attrMap(s)
			if s.Parent.SpanID() != root.SpanContext.SpanID() || s.SpanKind != trace.SpanKindClient {
				t.Errorf("attempt %d: parent/kind wrong", i+1)
			}
			if a["relay.host_key.id"] != want.key.ID.String() || a["http.response.status_code"] != want.status ||
				a["relay.error_kind"] != want.kind || a["relay.binding.shape"] != "openai" || a["relay.host"] != "openai" ||
				a["gen_ai.operation.name"] != "chat" || a["gen_ai.provider.name"] != "openai" || a["gen_ai.request.model"] != "gpt-4o-mini" {
				t.Errorf("attempt %d attributes %v", i+1, a)
			}
		}
		// Each attempt's context went upstream as its traceparent.
		up := f.requests()
		if len(up) != 2 {
			t.Fatalf("upstream saw %d requests", len(up))
		}
		for i := range up {
			want := "00-" + callerTraceID + "-" + attempts[i].SpanContext.SpanID().String() + "-01"
			if got := up[i].Header.Get("Traceparent"); got != want {
				t.Errorf("upstream request %d traceparent %q, want %q", i+1, got, want)
			}
		}
		st := one("relay.stream")
		if st.Parent.SpanID() != attempts[1].SpanContext.SpanID() || attrMap(st)["relay.stream"] != boolText(stream) {
			t.Errorf("relay.stream: parent %v attrs %v", st.Parent.SpanID(), attrMap(st))
		}
		_ = tp.Shutdown(t.Context())
	}
}

// Without a tracer provider the caller's traceparent goes upstream as sent.
func TestProxy_UntracedPassesTraceparent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	f.start()
	tp := "00-" + callerTraceID + "-" + callerSpanID + "-01"
	resp, out := f.post("/v1/chat/completions", `{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}`, map[string]string{"Traceparent": tp})
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	if up := f.requests(); len(up) != 1 || up[0].Header.Get("Traceparent") != tp {
		t.Errorf("upstream traceparent %q", up[0].Header.Get("Traceparent"))
	}
}

func attrMap(s tracetest.SpanStub) map[string]string {
	m := map[string]string{}
	for _, a := range s.Attributes {
		m[string(a.Key)] = a.Value.String()
	}
	return m
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
