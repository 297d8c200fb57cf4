package controlapi_test

import (
	"maps"
	"net/http"
	"testing"

	"github.com/relay-llm/relay/openapi/models"
)

// A host's profile and parameters are checked against the registry on
// create and update — an unknown profile or parameter, a missing required
// one and a bad value are 400s naming it — stored, and returned; an
// update that leaves them out keeps them.
func TestHosts_ProfileIsCheckedAndKept(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin

	create := func(prof string, params models.ProfileParams) models.HostCreate {
		b := models.HostCreate{Slug: "az", Provider: models.ProviderOpenai, BaseURL: "https://res.openai.azure.com/openai", Profile: &prof}
		if params != nil {
			b.ProfileParams = &params
		}
		return b
	}
	for _, tc := range []struct {
		prof   string
		params models.ProfileParams
		field  string
	}{
		{"azure_openia", nil, "profile"},
		{"azure_openai", models.ProfileParams{}, "profile_params.api_version"},
		{"azure_openai", models.ProfileParams{"api_version": "2024-10-21", "regoin": "x"}, "profile_params.regoin"},
		{"azure_openai", models.ProfileParams{"api_version": "2024/10"}, "profile_params.api_version"},
		{"azure_openai", models.ProfileParams{"api_version": "2024-10-21", "tenant_id": "t"}, "profile_params.client_id"},
		{"vertex", models.ProfileParams{"project": "p"}, "profile_params.location"},
		{"", models.ProfileParams{"region": "us-east-1"}, "profile_params.region"},
	} {
		e := call(c.CreateHostWithResponse(ctx, create(tc.prof, tc.params))).wantErr(t, http.StatusBadRequest, "invalid_request", tc.field)
		if e.Message == "" {
			t.Errorf("%s %v: no message", tc.prof, tc.params)
		}
	}

	want := models.ProfileParams{"api_version": "2024-10-21"}
	h := call(c.CreateHostWithResponse(ctx, create("azure_openai", want))).want(t, http.StatusCreated).JSON201
	if h.Profile != "azure_openai" || !maps.Equal(h.ProfileParams, want) {
		t.Fatalf("created profile %q %v", h.Profile, h.ProfileParams)
	}
	if got := call(c.GetHostWithResponse(ctx, h.ID)).want(t, http.StatusOK).JSON200; got.Profile != h.Profile || !maps.Equal(got.ProfileParams, want) {
		t.Errorf("get profile %q %v", got.Profile, got.ProfileParams)
	}
	if plain := b.host("plain"); plain.Profile != "" || plain.ProfileParams == nil || len(plain.ProfileParams) != 0 {
		t.Errorf("default profile %q %#v, want '' and {}", plain.Profile, plain.ProfileParams)
	}

	// Leaving them out keeps them; changing the profile alone checks the
	// kept parameters against the new one.
	upd := call(c.UpdateHostWithResponse(ctx, h.ID, models.HostUpdate{Name: ptr("n")})).want(t, http.StatusOK).JSON200
	if upd.Profile != "azure_openai" || !maps.Equal(upd.ProfileParams, want) {
		t.Errorf("update without profile: %q %v", upd.Profile, upd.ProfileParams)
	}
	call(c.UpdateHostWithResponse(ctx, h.ID, models.HostUpdate{Profile: ptr("vertex")})).
		wantErr(t, http.StatusBadRequest, "invalid_request", "profile_params.api_version")
	entra := models.ProfileParams{"api_version": "2024-10-21", "tenant_id": "contoso", "client_id": "app-1", "token_url": "https://login.example.com/t/token"}
	upd = call(c.UpdateHostWithResponse(ctx, h.ID, models.HostUpdate{ProfileParams: &entra})).want(t, http.StatusOK).JSON200
	if !maps.Equal(upd.ProfileParams, entra) {
		t.Errorf("updated params %v", upd.ProfileParams)
	}
	none := models.ProfileParams{}
	upd = call(c.UpdateHostWithResponse(ctx, h.ID, models.HostUpdate{Profile: ptr(""), ProfileParams: &none})).want(t, http.StatusOK).JSON200
	if upd.Profile != "" || len(upd.ProfileParams) != 0 {
		t.Errorf("cleared profile %q %v", upd.Profile, upd.ProfileParams)
	}
}
