package proxy_test

import "testing"

// The upstream header map is reused from request to request (pooled
// request state): nothing of one caller's headers, or of one shape's
// credential, reaches the next request's upstream.
func TestProxy_UpstreamHeadersDoNotCarryOver(t *testing.T) {
	f := newFixture(t)
	f.standard()
	f.start()
	for i := range 20 {
		hd := map[string]string(nil)
		if i%2 == 0 {
			hd = map[string]string{"X-Stainless-Trace": "first", "Anthropic-Beta": "b"}
		}
		path, body := "/v1/chat/completions", chatBody
		if i%4 >= 2 {
			path, body = "/v1/messages", messagesBody
		}
		if resp, b := f.post(path, body, hd); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		up := f.requests()[i].Header
		if got := up.Get("X-Stainless-Trace"); (got != "") != (i%2 == 0) {
			t.Errorf("request %d: X-Stainless-Trace %q upstream", i, got)
		}
		if path == "/v1/chat/completions" && (up.Get("X-Api-Key") != "" || up.Get("Authorization") != "Bearer "+openaiSecret) {
			t.Errorf("request %d (openai): upstream headers %v", i, up)
		}
		if path == "/v1/messages" && (up.Get("Authorization") != "" || up.Get("X-Api-Key") != anthropicSecret) {
			t.Errorf("request %d (anthropic): upstream headers %v", i, up)
		}
	}
}
