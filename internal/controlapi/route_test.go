package controlapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/routing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
	"github.com/relay-llm/relay/openapi/client"
)

// routedSnapshot is a Snapshot the explain can route on.
type routedSnapshot struct {
	fakeSnapshot
	snap *snapshot.Snapshot
}

func (r *routedSnapshot) Current() *snapshot.Snapshot { return r.snap }

// explainCatalog: model "small" (16k context, on host a with two keys)
// falls back to "big" (200k, on host b); policy p grants both.
func explainCatalog() (*snapshot.Snapshot, *snapshot.Policy) {
	n := byte(0)
	id := func() uuid.UUID { n++; return uuid.UUID{0xee, n} }
	a := &snapshot.Host{ID: id(), Slug: "a", Enabled: true, BaseURL: "http://a"}
	b := &snapshot.Host{ID: id(), Slug: "b", Enabled: true, BaseURL: "http://b"}
	small := &snapshot.Model{ID: id(), Name: "small", Kind: "chat", ContextWindow: 16_000, SupportsTools: true, SupportsJSON: true}
	big := &snapshot.Model{ID: id(), Name: "big", Kind: "chat", ContextWindow: 200_000, SupportsTools: true, SupportsJSON: true}
	small.Fallbacks = []snapshot.ID{big.ID}
	policy := &snapshot.Policy{ID: id(), Slug: "p", AllModels: true, AllHostKeys: true}
	d := &snapshot.Data{
		Hosts:  []*snapshot.Host{a, b},
		Models: []*snapshot.Model{small, big},
		HostKeys: []*snapshot.HostKey{
			{ID: id(), HostID: a.ID, Slug: "a1", Enabled: true, Usable: true, SecretVersion: 1},
			{ID: id(), HostID: a.ID, Slug: "a2", Position: 1, Enabled: true, Usable: true, SecretVersion: 1},
			{ID: id(), HostID: b.ID, Slug: "b1", Enabled: true, Usable: true, SecretVersion: 1},
		},
		Bindings: []*snapshot.Binding{
			{ID: id(), ModelID: small.ID, HostID: a.ID, Shape: wire.ShapeOpenAI, UpstreamModel: "small-up", Enabled: true},
			{ID: id(), ModelID: big.ID, HostID: b.ID, Shape: wire.ShapeOpenAI, UpstreamModel: "big-up", Enabled: true},
		},
		Policies: []*snapshot.Policy{policy},
	}
	return snapshot.Build(d, 7, time.Now()), policy
}

func TestRouteExplain_SaysWhereTheRequestGoes(t *testing.T) {
	t.Parallel()
	snap, policy := explainCatalog()
	b := setup(t, func(c *controlapi.Config) { c.Snapshot = &routedSnapshot{snap: snap} })
	body := json.RawMessage(`{"model":"small","prompt_cache_key":"s-1","messages":[{"role":"user","content":"hi"}]}`)
	explain := func(req map[string]any) clientRouteExplainResponse {
		t.Helper()
		raw, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		return call(b.admin.RouteExplainWithBodyWithResponse(b.ctx, "application/json", bytes.NewReader(raw)))
	}
	pid := policy.ID.String()
	res := explain(map[string]any{"policy_id": pid, "body": body, "headers": map[string]string{"X-Relay-Route": "cost=min"}}).want(t, http.StatusOK).JSON200
	e := res.Explanation
	if res.SnapshotVersion != 7 || res.Refusal != nil || e.Model != "small" || e.Strategy != "cost" || e.StrategyFrom != "hint" ||
		e.Affinity != "key" || e.SessionFrom == nil || *e.SessionFrom != "prompt_cache_key" {
		t.Fatalf("explanation %+v", res)
	}
	// The same request routed by the router itself.
	r := routing.Router{}
	want, err := r.ExplainBody(snap, policy, uuid.Nil, "", wire.InboundChat, body, http.Header{"X-Relay-Route": {"cost=min"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if e.Chosen == nil || e.Chosen.HostKey != want.Chosen.HostKey || e.Chosen.Host != "a" || e.Chosen.Affinity != "hit" || len(e.Candidates) != 2 {
		t.Fatalf("chosen %+v, the router's %+v", e.Chosen, want.Chosen)
	}
	// Each candidate names its binding's upstream model.
	for i, up := range []string{"small-up", "big-up"} {
		if c := e.Candidates[i]; c.UpstreamModel == nil || *c.UpstreamModel != up || want.Candidates[i].UpstreamModel != up {
			t.Errorf("candidate %d: upstream model %v (the router's %q), want %q", i, c.UpstreamModel, want.Candidates[i].UpstreamModel, up)
		}
	}

	// A prompt too long for small goes to its fallback, and the skip says why.
	long := json.RawMessage(`{"model":"small","max_tokens":16000,"messages":[{"role":"user","content":"hi"}]}`)
	res = explain(map[string]any{"policy_id": pid, "body": long}).want(t, http.StatusOK).JSON200
	e = res.Explanation
	if e.Chosen == nil || e.Chosen.Model != "big" || e.Candidates[0].Skip == nil || *e.Candidates[0].Skip != "context window too small" {
		t.Fatalf("long request: %+v", e)
	}

	// Exactly one caller; a model or a body.
	explain(map[string]any{"model": "small"}).want(t, http.StatusUnprocessableEntity)
	explain(map[string]any{"policy_id": pid}).want(t, http.StatusUnprocessableEntity)
	res = explain(map[string]any{"policy_id": pid, "model": "small"}).want(t, http.StatusOK).JSON200
	if res.Explanation.Chosen == nil || res.Explanation.Affinity != "off" {
		t.Fatalf("model alone: %+v", res.Explanation)
	}
}

// clientRouteExplainResponse is the generated client's answer to
// routeExplain, with the test helpers' checks.
type clientRouteExplainResponse = res[*client.RouteExplainResponse]

// Without a snapshot or a router to explain with there is nothing to route.
func TestRouteExplain_NotImplementedWithoutRouter(t *testing.T) {
	t.Parallel()
	snap, policy := explainCatalog()
	b := setup(t, func(c *controlapi.Config) { c.Snapshot, c.Explain = &routedSnapshot{snap: snap}, nil })
	raw, err := json.Marshal(map[string]any{"policy_id": policy.ID, "model": "small"})
	if err != nil {
		t.Fatal(err)
	}
	call(b.admin.RouteExplainWithBodyWithResponse(b.ctx, "application/json", bytes.NewReader(raw))).
		wantErr(t, http.StatusNotImplemented, "not_implemented", "")
	noSnap := setup(t)
	call(noSnap.admin.RouteExplainWithBodyWithResponse(noSnap.ctx, "application/json", bytes.NewReader(raw))).
		wantErr(t, http.StatusNotImplemented, "not_implemented", "")
}
