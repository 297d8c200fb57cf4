package proxy_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/mockupstream"
)

// FuzzMessageBatchBody holds a Message Batches create to the trust
// boundary: any body is answered 2xx or 4xx in Anthropic's shape (never a
// 5xx, a panic or a hang), and a body Relay lets through reaches the
// upstream with only custom_id and params, every request naming the
// binding's upstream model — what Relay decided on is what runs.
func FuzzMessageBatchBody(f *testing.F) {
	for _, s := range []string{
		`{"requests":[{"custom_id":"a","params":{"model":"claude-test","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}}]}`,
		`{"requests":[{"custom_id":"a","params":{"model":"claude-test","max_tokens":8,"messages":[]}},{"custom_id":"b","params":{"model":"claude-test","max_tokens":1}}]}`,
		`{"requests":[{"custom_id":"a","params":{"model":"claude-test","model":"other"}}]}`,
		`{"requests":[{"custom_id":"a","params":{"mod\u0065l":"claude-test","Model":"x"}}]}`,
		`{"requests":[{"custom_id":"a","params":{"model":"claude-test"}}],"requests":[]}`,
		`{"requests":[{"custom_id":"a","params":{"model":"claude-test","max_tokens":1e400}}]}`,
		`{"requests":[{"custom_id":"a","params":[]}]}`,
		`{"requests":null}`, `[]`, `{`, ``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		fx := newMsgBatchFixture(t)
		fx.start()
		resp, got := fx.post("/v1/messages/batches", body, map[string]string{"anthropic-version": "2023-06-01"})
		switch {
		case resp.StatusCode >= 500:
			t.Fatalf("%q = %d %s", body, resp.StatusCode, got)
		case resp.StatusCode >= 300:
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Type, Message string
				} `json:"error"`
			}
			if json.Unmarshal([]byte(got), &e) != nil || e.Type != "error" || e.Error.Type == "" || e.Error.Message == "" {
				t.Fatalf("%q = %d %s, not Anthropic's error shape", body, resp.StatusCode, got)
			}
			return
		}
		var sent []mockupstream.Request
		for _, r := range fx.requests() {
			if r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/messages/batches") {
				sent = append(sent, r)
			}
		}
		if len(sent) != 1 {
			t.Fatalf("%q: %d creates upstream", body, len(sent))
		}
		var up map[string][]map[string]json.RawMessage
		if err := json.Unmarshal(sent[0].Body, &up); err != nil || len(up) != 1 || len(up["requests"]) == 0 {
			t.Fatalf("upstream body %s: %v", sent[0].Body, err)
		}
		for _, r := range up["requests"] {
			var params map[string]any
			if len(r) != 2 || json.Unmarshal(r["params"], &params) != nil || params["model"] != "claude-sonnet-cached-cache-write" {
				t.Fatalf("%q reached the upstream as %s", body, sent[0].Body)
			}
		}
	})
}
