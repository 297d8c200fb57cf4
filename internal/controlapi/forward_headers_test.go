package controlapi_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/relay-llm/relay/openapi/models"
)

// A host's forward_headers are stored canonical and returned; a header
// that carries credentials or selects billing, a project or an
// organisation is refused at write, on create and on update.
func TestHosts_ForwardHeadersRefuseCredentialsAndBilling(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin

	fwd := models.ForwardHeaders{"x-app", "Idempotency-Key"}
	h := call(c.CreateHostWithResponse(ctx, models.HostCreate{
		Slug: "fwd", Provider: models.ProviderOpenai, BaseURL: "https://api.example.com/v1", ForwardHeaders: &fwd,
	})).want(t, http.StatusCreated).JSON201
	if want := []string{"X-App", "Idempotency-Key"}; !slices.Equal(h.ForwardHeaders, want) {
		t.Errorf("created forward_headers %v, want %v", h.ForwardHeaders, want)
	}
	if got := call(c.GetHostWithResponse(ctx, h.ID)).want(t, http.StatusOK).JSON200; !slices.Equal(got.ForwardHeaders, h.ForwardHeaders) {
		t.Errorf("get forward_headers %v", got.ForwardHeaders)
	}
	plain := b.host("plain")
	if plain.ForwardHeaders == nil || len(plain.ForwardHeaders) != 0 {
		t.Errorf("default forward_headers %#v, want []", plain.ForwardHeaders)
	}

	for _, bad := range []string{"X-Goog-User-Project", "api-key", "Authorization", "x-api-key", "OpenAI-Organization",
		"OpenAI-Project", "X-Forwarded-For", "Forwarded", "Content-Encoding", "X-Mock-Fault", "X-Relay-Route", "bad name"} {
		list := models.ForwardHeaders{"X-App", bad}
		call(c.CreateHostWithResponse(ctx, models.HostCreate{
			Slug: "bad", Provider: models.ProviderOpenai, BaseURL: "https://api.example.com/v1", ForwardHeaders: &list,
		})).wantErr(t, http.StatusBadRequest, "invalid_request", "forward_headers")
		call(c.UpdateHostWithResponse(ctx, h.ID, models.HostUpdate{ForwardHeaders: &list})).
			wantErr(t, http.StatusBadRequest, "invalid_request", "forward_headers")
	}
	// An update without forward_headers keeps them; an empty list clears them.
	upd := call(c.UpdateHostWithResponse(ctx, h.ID, models.HostUpdate{Name: ptr("n")})).want(t, http.StatusOK).JSON200
	if !slices.Equal(upd.ForwardHeaders, h.ForwardHeaders) {
		t.Errorf("update without forward_headers: %v", upd.ForwardHeaders)
	}
	empty := models.ForwardHeaders{}
	if upd := call(c.UpdateHostWithResponse(ctx, h.ID, models.HostUpdate{ForwardHeaders: &empty})).want(t, http.StatusOK).JSON200; len(upd.ForwardHeaders) != 0 {
		t.Errorf("cleared forward_headers: %v", upd.ForwardHeaders)
	}
}
