package controlapi_test

import (
	"net/http"
	"testing"

	"github.com/relay-llm/relay/openapi/models"
	relaynull "github.com/relay-llm/relay/openapi/nullable"
)

// A host's breaker thresholds are stored and returned; absent is null (the
// process setting); out of 1..1000 is refused with 400 naming the field, on
// create and on update; an update without them keeps them, null clears them.
func TestHosts_BreakerThresholds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin

	h := call(c.CreateHostWithResponse(ctx, models.HostCreate{
		Slug: "strict", Provider: models.ProviderOpenai, BaseURL: "https://api.example.com/v1",
		BreakerServerFailures: ptr[int32](1), BreakerNetworkFailures: ptr[int32](1000),
	})).want(t, http.StatusCreated).JSON201
	if h.BreakerServerFailures == nil || *h.BreakerServerFailures != 1 || h.BreakerNetworkFailures == nil || *h.BreakerNetworkFailures != 1000 {
		t.Fatalf("created thresholds %v %v, want 1 1000", h.BreakerServerFailures, h.BreakerNetworkFailures)
	}
	if got := call(c.GetHostWithResponse(ctx, h.ID)).want(t, http.StatusOK).JSON200; got.BreakerServerFailures == nil || *got.BreakerServerFailures != 1 {
		t.Errorf("get breaker_server_failures %v", got.BreakerServerFailures)
	}
	if plain := b.host("plain"); plain.BreakerServerFailures != nil || plain.BreakerNetworkFailures != nil {
		t.Errorf("default thresholds %v %v, want null", plain.BreakerServerFailures, plain.BreakerNetworkFailures)
	}

	tests := []struct {
		field  string
		create models.HostCreate
		update models.HostUpdate
	}{
		{"breaker_server_failures", models.HostCreate{BreakerServerFailures: ptr[int32](0)}, models.HostUpdate{BreakerServerFailures: relaynull.Value[int32](0)}},
		{"breaker_server_failures", models.HostCreate{BreakerServerFailures: ptr[int32](1001)}, models.HostUpdate{BreakerServerFailures: relaynull.Value[int32](1001)}},
		{"breaker_network_failures", models.HostCreate{BreakerNetworkFailures: ptr[int32](-1)}, models.HostUpdate{BreakerNetworkFailures: relaynull.Value[int32](-1)}},
		{"breaker_network_failures", models.HostCreate{BreakerNetworkFailures: ptr[int32](5000)}, models.HostUpdate{BreakerNetworkFailures: relaynull.Value[int32](5000)}},
	}
	for _, tt := range tests {
		body := tt.create
		body.Slug, body.Provider, body.BaseURL = "bad", models.ProviderOpenai, "https://api.example.com/v1"
		call(c.CreateHostWithResponse(ctx, body)).wantErr(t, http.StatusBadRequest, "invalid_request", tt.field)
		call(c.UpdateHostWithResponse(ctx, h.ID, tt.update)).wantErr(t, http.StatusBadRequest, "invalid_request", tt.field)
	}

	upd := call(c.UpdateHostWithResponse(ctx, h.ID, models.HostUpdate{Name: ptr("n")})).want(t, http.StatusOK).JSON200
	if upd.BreakerServerFailures == nil || *upd.BreakerServerFailures != 1 {
		t.Errorf("update without thresholds: %v", upd.BreakerServerFailures)
	}
	upd = call(c.UpdateHostWithResponse(ctx, h.ID, models.HostUpdate{
		BreakerServerFailures: relaynull.Null[int32](), BreakerNetworkFailures: relaynull.Value[int32](3),
	})).want(t, http.StatusOK).JSON200
	if upd.BreakerServerFailures != nil || upd.BreakerNetworkFailures == nil || *upd.BreakerNetworkFailures != 3 {
		t.Errorf("after null and 3: %v %v", upd.BreakerServerFailures, upd.BreakerNetworkFailures)
	}
}
