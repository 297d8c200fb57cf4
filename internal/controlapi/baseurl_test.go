package controlapi_test

import (
	"net"
	"net/http"
	"net/netip"
	"testing"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/egress"
)

// TestHosts_RefuseBaseURLsAtRelayOrMetadata: a host's base URL may not name
// Relay's own listeners nor a metadata address, and must be in
// RELAY_UPSTREAM_ALLOW when it is set; create and update answer 422 naming
// base_url. A loopback mock on another port is fine.
func TestHosts_RefuseBaseURLsAtRelayOrMetadata(t *testing.T) {
	t.Parallel()
	g, err := egress.New([]string{"127.0.0.0/8", "*.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	g.SetListeners(net.TCPAddrFromAddrPort(netip.MustParseAddrPort("0.0.0.0:8080")), net.TCPAddrFromAddrPort(netip.MustParseAddrPort("0.0.0.0:8081")))
	b := setup(t, func(c *controlapi.Config) { c.Egress = g })
	ctx, c := b.ctx, b.admin
	h := b.host("h")
	call(c.CreateHostWithResponse(ctx, models.HostCreate{Slug: "mock", Provider: models.ProviderOpenai, BaseURL: "http://127.0.0.1:9999/mock-upstream"})).
		want(t, http.StatusCreated)
	for i, u := range []string{
		"http://127.0.0.1:8081/api", "http://localhost:8080", "http://[::1]:8081", "http://0.0.0.0:8081",
		"http://169.254.169.254/latest", "http://metadata.google.internal/", "http://[fd00:ec2::254]/",
		"http://10.0.0.1/v1", // not in the allow-list (names are checked against it on dial, after DNS)
	} {
		call(c.CreateHostWithResponse(ctx, models.HostCreate{Slug: "x" + string(rune('a'+i)), Provider: models.ProviderOpenai, BaseURL: u})).
			wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "base_url")
		call(c.UpdateHostWithResponse(ctx, h.ID, models.HostUpdate{BaseURL: &u})).
			wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "base_url")
	}
}

// Without an allow-list and before the listeners are known, metadata
// addresses are still refused by default.
func TestHosts_RefuseMetadataByDefault(t *testing.T) {
	t.Parallel()
	b := setup(t)
	call(b.admin.CreateHostWithResponse(b.ctx, models.HostCreate{Slug: "meta", Provider: models.ProviderOpenai, BaseURL: "http://169.254.169.254/"})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "base_url")
}
