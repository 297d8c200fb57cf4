package usage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/pricing"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/internal/wire"
)

// TestUsage_EveryPairMatchesTheUpstream sends each inbound shape to a
// binding of each upstream shape, streaming and not, and holds the ledger to
// the usage the mock reported in its own shape — cached and reasoning tokens
// included — and to the cost of that usage. A caller that leaves a
// translated stream is charged for what the upstream had reported by then.
func TestUsage_EveryPairMatchesTheUpstream(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	prompt := "Count my tokens, " + promptMarker + ", please."
	anthHeader := map[string]string{"anthropic-version": "2023-06-01"}
	type inbound struct {
		name, path string
		body       func(model string, stream bool) string
		header     map[string]string
	}
	inbounds := []inbound{
		{"openai_chat", "/v1/chat/completions", func(m string, s bool) string {
			b := `{"model":"` + m + `","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"` + prompt + `"}]`
			if s {
				b += `,"stream":true,"stream_options":{"include_usage":true}`
			}
			return b + `}`
		}, nil},
		{"anthropic_messages", "/v1/messages", func(m string, s bool) string {
			return fmt.Sprintf(`{"model":%q,"max_tokens":300,"system":"Be brief.","stream":%v,"messages":[{"role":"user","content":%q}]}`, m, s, prompt)
		}, anthHeader},
		{"openai_responses", "/v1/responses", func(m string, s bool) string {
			return fmt.Sprintf(`{"model":%q,"instructions":"Be brief.","stream":%v,"input":%q}`, m, s, prompt)
		}, nil},
		{"relay_generate", "/v1/generate", func(m string, s bool) string {
			return fmt.Sprintf(`{"model":%q,"system":"Be brief.","max_output_tokens":300,"stream":%v,"messages":[{"role":"user","content":%q}]}`, m, s, prompt)
		}, nil},
	}
	models := []string{"chat", "resp", "claude", "gem"}

	type want struct{ model, inbound string }
	cases := map[string]want{}
	for _, in := range inbounds {
		for _, m := range models {
			for _, stream := range []bool{false, true} {
				id := fmt.Sprintf("%s-%s-%v", in.name, m, stream)
				if s, b := r.send(id, in.path, in.body(m, stream), in.header); s != 200 {
					t.Fatalf("%s: %d %s", id, s, b)
				}
				cases[id] = want{m, in.name}
			}
		}
	}
	// Leaving a translated stream after its first event: Anthropic reported
	// the input at message_start, so that is what the caller is charged.
	left := "openai_chat-claude-left"
	r.sendAndLeave(left, "/v1/chat/completions", inbounds[0].body("claude", true), 1, map[string]string{e2eFault: "stall-3"})

	r.srv.Close() // waits for every handler, so every Record is in
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := r.st.ListUsageEvents(ctx, store.UsageEventsPage{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(cases)+1 {
		t.Fatalf("%d rows, want %d", len(rows), len(cases)+1)
	}
	for _, row := range rows {
		// The ledger keys the event by Relay's own id; the case's name is
		// the caller's X-Request-ID, kept as an attribute.
		id := clientID(t, row)
		t.Run(id, func(t *testing.T) {
			w, ok := cases[id]
			if id == left {
				w, ok = want{"claude", "openai_chat"}, true
				if row.Status != 499 || row.ErrorKind != "client_canceled" {
					t.Errorf("status %d %q, want 499 client_canceled", row.Status, row.ErrorKind)
				}
			} else if row.Status != 200 {
				t.Errorf("status %d %q", row.Status, row.ErrorKind)
			}
			if !ok {
				t.Fatalf("unexpected row")
			}
			b := r.bindings[w.model]
			exp := reported(t, b.Shape, r.cap.body(id))
			got := wire.Usage{Input: row.InputTokens, Output: row.OutputTokens, CacheRead: row.CachedReadTokens,
				CacheWrite: row.CacheWriteTokens, Reasoning: row.ReasoningTokens}
			if got != exp {
				t.Errorf("usage %+v, the upstream reported %+v", got, exp)
			}
			if exp.Input == 0 || id != left && exp.Output == 0 {
				t.Errorf("the upstream reported no usage: %+v", exp)
			}
			if id != left && w.model != "chat" && (exp.CacheRead == 0 || exp.Reasoning == 0) {
				t.Errorf("the mock did not report cached and reasoning tokens: %+v", exp)
			}
			if want := pricing.Cost(&b.Pricing, exp); row.Cost != want {
				t.Errorf("cost %d, want %d", row.Cost, want)
			}
			if row.InboundShape != w.inbound || row.UpstreamShape != string(b.Shape) || row.Model != w.model {
				t.Errorf("shapes %s→%s model %s, want %s→%s %s", row.InboundShape, row.UpstreamShape, row.Model, w.inbound, b.Shape, w.model)
			}
		})
	}
	assertRollupsMatchLedger(t, r.st)
}
