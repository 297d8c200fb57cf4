package openapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/google/uuid"

	"github.com/relay-llm/relay/openapi/client"
	"github.com/relay-llm/relay/openapi/controlgen"
	"github.com/relay-llm/relay/openapi/nullable"
)

// stub implements the few operations the round trip calls; any other one
// panics on the nil embedded interface.
type stub struct {
	controlgen.StrictServerInterface

	mu        sync.Mutex
	lastPatch models.RelayKeyUpdate // guarded by mu
}

func (s *stub) CreateTeam(_ context.Context, req controlgen.CreateTeamRequestObject) (controlgen.CreateTeamResponseObject, error) {
	now := time.Now().UTC()
	name := ""
	if req.Body.Name != nil {
		name = *req.Body.Name
	}
	return controlgen.CreateTeam201JSONResponse{ID: uuid.New(), Slug: req.Body.Slug, Name: name, CreatedAt: now, UpdatedAt: now}, nil
}

func (s *stub) UpdateRelayKey(_ context.Context, req controlgen.UpdateRelayKeyRequestObject) (controlgen.UpdateRelayKeyResponseObject, error) {
	s.mu.Lock()
	s.lastPatch = *req.Body
	s.mu.Unlock()
	return controlgen.UpdateRelayKey404JSONResponse{NotFoundJSONResponse: controlgen.NotFoundJSONResponse{
		Error: models.ErrorInfo{Code: "not_found", Message: "relay key not found"},
	}}, nil
}

func (s *stub) ListUsageEvents(_ context.Context, req controlgen.ListUsageEventsRequestObject) (controlgen.ListUsageEventsResponseObject, error) {
	if req.Params.Format != nil && *req.Params.Format == models.UsageEventsFormatCsv {
		body := "request_id,created_at,model,status\nreq-1,2026-01-02T03:04:05Z,gpt-4o-mini,200\n"
		return controlgen.ListUsageEvents200TextCsvResponse{Body: strings.NewReader(body), ContentLength: int64(len(body))}, nil
	}
	return controlgen.ListUsageEvents200JSONResponse{Body: models.UsageEventList{Items: []models.UsageEvent{}}}, nil
}

// serve runs the generated strict handler behind request validation against
// the embedded spec, the way the control plane wires it.
func serve(t *testing.T) (*stub, *client.ClientWithResponses) {
	t.Helper()
	doc, err := controlgen.GetSpec()
	if err != nil {
		t.Fatalf("GetSpec: %v", err)
	}
	doc.Servers = nil // match any host: the test server's address is not the spec's
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatalf("router: %v", err)
	}
	s := &stub{}
	api := controlgen.Handler(controlgen.NewStrictHandler(s, nil))
	validate := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route, params, err := router.FindRoute(r)
		if err == nil {
			err = openapi3filter.ValidateRequest(r.Context(), &openapi3filter.RequestValidationInput{
				Request: r, PathParams: params, Route: route,
				Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
			})
		}
		if err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": "invalid_request", "message": err.Error()}}) // test
			return
		}
		api.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(validate)
	t.Cleanup(srv.Close)
	c, err := client.NewClientWithResponses(srv.URL, client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer test-admin-token")
		return nil
	}))
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return s, c
}

func TestRoundTrip_CreateAndValidation(t *testing.T) {
	t.Parallel()
	_, c := serve(t)
	ctx := context.Background()

	name := "Platform"
	resp, err := c.CreateTeamWithResponse(ctx, models.TeamCreate{Slug: "platform", Name: &name})
	if err != nil {
		t.Fatalf("create team: %v", err)
	}
	if resp.StatusCode() != http.StatusCreated || resp.JSON201 == nil || resp.JSON201.Slug != "platform" {
		t.Fatalf("create team = %d %s, want 201 with the team", resp.StatusCode(), resp.Body)
	}

	bad := []struct{ name, body string }{
		{"slug breaks the CHECK pattern", `{"slug":"Not A Slug"}`},
		{"unknown field", `{"slug":"ok","nmae":"typo"}`},
		{"missing required field", `{"name":"no slug"}`},
	}
	for _, tt := range bad {
		resp, err := c.CreateTeamWithBodyWithResponse(ctx, "application/json", strings.NewReader(tt.body))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if resp.StatusCode() != http.StatusBadRequest || resp.JSON400 == nil || resp.JSON400.Error.Code == "" {
			t.Errorf("%s: got %d %s, want 400 with an Error", tt.name, resp.StatusCode(), resp.Body)
		}
	}
}

func TestRoundTrip_PatchTellsNullFromAbsent(t *testing.T) {
	t.Parallel()
	s, c := serve(t)
	resp, err := c.UpdateRelayKeyWithResponse(context.Background(), uuid.New(), models.RelayKeyUpdate{
		PolicyID: nullable.Null[uuid.UUID](), // clear
		Priority: nullable.Value[int32](5),   // set
		// ExpiresAt absent: leave alone
	})
	if err != nil {
		t.Fatalf("update relay key: %v", err)
	}
	if resp.StatusCode() != http.StatusNotFound || resp.JSON404 == nil {
		t.Fatalf("update relay key = %d %s, want the stub's 404", resp.StatusCode(), resp.Body)
	}
	s.mu.Lock()
	got := s.lastPatch
	s.mu.Unlock()
	if !got.PolicyID.IsNull() {
		t.Errorf("policy_id: want an explicit null, got %v", got.PolicyID)
	}
	if p, ok := got.Priority.Get(); !ok || p != 5 {
		t.Errorf("priority = %v, %v; want 5", p, ok)
	}
	if got.ExpiresAt.IsSpecified() {
		t.Errorf("expires_at: want absent, got %v", got.ExpiresAt)
	}
}

func TestRoundTrip_UsageEventsCSV(t *testing.T) {
	t.Parallel()
	_, c := serve(t)
	format := models.UsageEventsFormatCsv
	resp, err := c.ListUsageEvents(context.Background(), &models.ListUsageEventsParams{Format: &format})
	if err != nil {
		t.Fatalf("list usage events: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/csv" {
		t.Fatalf("csv = %d %q, want 200 text/csv", resp.StatusCode, ct)
	}
	if !strings.HasPrefix(string(body), "request_id,") {
		t.Errorf("csv body = %q, want a header row", body)
	}
}
