package ui_test

import (
	"net/http"
	"net/url"
	"testing"
)

// The host form sets a host's breaker thresholds, shows them when editing,
// clears one left empty (back to the process setting), and marks one out of
// range on its field.
func TestConsole_HostFormBreakerThresholds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "admin")
	br := b.signedIn("ada@example.com")
	host := url.Values{"slug": {"strict"}, "provider": {"openai"}, "base_url": {"https://api.example.com/v1"}, "enabled": {"on"}}

	must(t, br.get("/hosts/new"), http.StatusOK, `name="breaker_server_failures"`, `name="breaker_network_failures"`)
	bad := url.Values{"breaker_server_failures": {"0"}}
	for k, v := range host {
		bad[k] = v
	}
	must(t, br.post("/hosts", bad), http.StatusBadRequest, `class="field invalid"`, "breaker_server_failures")

	set := url.Values{"breaker_server_failures": {"1"}, "breaker_network_failures": {"7"}}
	for k, v := range host {
		set[k] = v
	}
	created(t, br, "/hosts", set)
	id := rowID(t, br.get("/hosts"), "hosts", "strict")
	h := b.apiCall("GET", "/api/hosts/"+id, nil)
	if h["breaker_server_failures"] != float64(1) || h["breaker_network_failures"] != float64(7) {
		t.Fatalf("host %v", h)
	}
	must(t, br.get("/hosts/"+id), http.StatusOK, `value="1"`, `value="7"`)

	edit := url.Values{"breaker_network_failures": {"7"}}
	for k, v := range host {
		edit[k] = v
	}
	if a := br.post("/hosts/"+id, edit); a.status != http.StatusSeeOther {
		t.Fatalf("edit: %d\n%s", a.status, a.body)
	}
	h = b.apiCall("GET", "/api/hosts/"+id, nil)
	if _, set := h["breaker_server_failures"]; set || h["breaker_network_failures"] != float64(7) {
		t.Fatalf("after clearing breaker_server_failures: %v", h)
	}
}
