package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/secret"
)

// exportedSpan is one span an OTLP/HTTP collector received.
type exportedSpan struct {
	name, service, traceID, parentID string
}

// otlpCollector is an OTLP/HTTP (protobuf) trace receiver.
func otlpCollector(t *testing.T) (url string, spans <-chan exportedSpan) {
	ch := make(chan exportedSpan, 256)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("collector got %s %s (%s)", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("collector: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			service := ""
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					select {
					case ch <- exportedSpan{name: s.Name, service: service, traceID: hexOf(s.TraceId), parentID: hexOf(s.ParentSpanId)}:
					default:
					}
				}
			}
		}
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, ch
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&0xf])
	}
	return string(out)
}

// TestServe_ExportsTraces runs relay serve with OTEL_EXPORTER_OTLP_ENDPOINT
// pointing at a local collector: a request's spans arrive there, in the
// caller's trace, from service relay.
func TestServe_ExportsTraces(t *testing.T) {
	collector, spans := otlpCollector(t)
	p := startRelay(t, pgtest.NewDB(t), true, "RELAY_DEMO=true", "RELAY_MASTER_KEY="+secret.NewKey(),
		"OTEL_EXPORTER_OTLP_ENDPOINT="+collector, "OTEL_BSP_SCHEDULE_DELAY=50")
	waitReady(t, p.inference)

	const traceID, parentID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	req, _ := http.NewRequest("POST", p.inference+"/v1/chat/completions",
		strings.NewReader(`{"model":"demo-gpt","stream":true,"messages":[{"role":"user","content":"trace me"}]}`))
	req.Header.Set("Authorization", "Bearer "+p.relayKey)
	req.Header.Set("Traceparent", "00-"+traceID+"-"+parentID+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("chat: %d", resp.StatusCode)
	}

	want := map[string]bool{"relay.request": false, "relay.auth": false, "relay.route": false, "relay.reserve": false, "relay.upstream_attempt": false, "relay.stream": false}
	missing := len(want)
	deadline := time.After(15 * time.Second)
	for missing > 0 {
		select {
		case s := <-spans:
			if s.traceID != traceID {
				continue // e.g. a readiness probe's trace
			}
			if s.service != "relay" {
				t.Errorf("%s from service %q", s.name, s.service)
			}
			if s.name == "relay.request" && s.parentID != parentID {
				t.Errorf("relay.request parent %s, want the caller's %s", s.parentID, parentID)
			}
			if seen, ok := want[s.name]; ok && !seen {
				want[s.name] = true
				missing--
			}
		case <-deadline:
			t.Fatalf("spans not exported within 15s: %v", want)
		}
	}
}
