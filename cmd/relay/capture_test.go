package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/secret"
)

const captureAdminToken = "capture-admin-token-0123456789"

func adminDo(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+captureAdminToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// chatWithID sends body with X-Request-ID id and returns the answer and
// Relay's own request id (X-Relay-Request-ID), which addresses the capture.
func chatWithID(t *testing.T, base, key, id, body string) (string, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("X-Request-ID", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("chat %s: %d %s", id, resp.StatusCode, out)
	}
	return string(out), resp.Header.Get("X-Relay-Request-ID")
}

// TestServe_CapturesPayloads turns capture_payloads on for the demo policy
// through the control API: a request made before has no capture, one made
// after lands in payload_captures with its body and answer, is readable at
// GET /api/payloads/{request_id} and is gone after DELETE.
func TestServe_CapturesPayloads(t *testing.T) {
	p := startRelay(t, pgtest.NewDB(t), true, "RELAY_DEMO=true", "RELAY_ADMIN_TOKEN="+captureAdminToken, "RELAY_MASTER_KEY="+secret.NewKey())
	waitReady(t, p.inference)
	const before = `{"model":"demo-gpt","messages":[{"role":"user","content":"not captured"}]}`
	_, beforeID := chatWithID(t, p.inference, p.relayKey, "req-before-capture", before)

	status, body := adminDo(t, "GET", p.control+"/api/policies", "")
	var list struct {
		Items []struct {
			ID              string `json:"id"`
			CapturePayloads bool   `json:"capture_payloads"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &list); status != 200 || err != nil || len(list.Items) == 0 {
		t.Fatalf("list policies: %d %s", status, body)
	}
	for _, pol := range list.Items {
		if pol.CapturePayloads {
			t.Fatalf("policy %s captures by default", pol.ID)
		}
		if status, body := adminDo(t, "PATCH", p.control+"/api/policies/"+pol.ID, `{"capture_payloads":true,"capture_max_bytes":4096}`); status != 200 || !strings.Contains(string(body), `"capture_payloads":true`) {
			t.Fatalf("turn capture on: %d %s", status, body)
		}
	}

	if status, body := adminDo(t, "POST", p.control+"/api/snapshot/reload", ""); status != 200 {
		t.Fatalf("reload: %d %s", status, body)
	}

	const prompt = `{"model":"demo-gpt","stream":true,"messages":[{"role":"user","content":"please capture me"}]}`
	answer, capturedID := chatWithID(t, p.inference, p.relayKey, "req-captured", prompt)
	// The writer flushes at least once a second.
	poll.Until(t, 15*time.Second, "the capture is stored", func() bool {
		status, body = adminDo(t, "GET", p.control+"/api/payloads/"+capturedID, "")
		return status != 404
	})
	if status != 200 {
		t.Fatalf("no capture: %d %s", status, body)
	}
	var got struct {
		RequestBody  string `json:"request_body"`
		ResponseBody string `json:"response_body"`
		Truncated    bool   `json:"truncated"`
		Model        string `json:"model"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.RequestBody != prompt || got.ResponseBody != answer || got.Truncated || got.Model != "demo-gpt" {
		t.Fatalf("capture:\n%+v\nwant answer %q", got, answer)
	}
	if strings.Contains(string(body), p.relayKey) {
		t.Fatal("the capture holds the relay key")
	}
	if status, _ := adminDo(t, "DELETE", p.control+"/api/payloads/"+capturedID, ""); status != 204 {
		t.Fatalf("delete: %d", status)
	}
	if status, _ := adminDo(t, "GET", p.control+"/api/payloads/"+capturedID, ""); status != 404 {
		t.Fatalf("after delete: %d", status)
	}
	if status, body := adminDo(t, "GET", p.control+"/metrics", ""); status != 200 ||
		!strings.Contains(string(body), "relay_payload_captures_written_total 1\n") || !strings.Contains(string(body), "relay_payload_captures_dropped_total 0\n") {
		t.Errorf("/metrics: %d, capture counters missing or wrong", status)
	}
	if status, _ := adminDo(t, "GET", p.control+"/api/payloads/"+beforeID, ""); status != 404 {
		t.Errorf("a request made with capture off was captured: %d", status)
	}
}
