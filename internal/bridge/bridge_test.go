package bridge_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/bridge"
	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/routing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// catalog: model "small" on host a, whose keys a1 and a2 (secret version
// 1) are tried in that order; policy p grants everything and takes the
// keys by priority.
func catalog() (*snapshot.Snapshot, *snapshot.Policy, *snapshot.HostKey) {
	n := byte(0)
	id := func() uuid.UUID { n++; return uuid.UUID{0xbb, n} }
	a := &snapshot.Host{ID: id(), Slug: "a", Enabled: true, BaseURL: "http://a"}
	small := &snapshot.Model{ID: id(), Name: "small", Kind: "chat", ContextWindow: 16_000}
	policy := &snapshot.Policy{ID: id(), Slug: "p", AllModels: true, AllHostKeys: true, KeyStrategy: snapshot.StrategyPrioritized}
	a1 := &snapshot.HostKey{ID: id(), HostID: a.ID, Slug: "a1", Enabled: true, Usable: true, SecretVersion: 1}
	d := &snapshot.Data{
		Hosts:  []*snapshot.Host{a},
		Models: []*snapshot.Model{small},
		HostKeys: []*snapshot.HostKey{a1,
			{ID: id(), HostID: a.ID, Slug: "a2", Position: 1, Enabled: true, Usable: true, SecretVersion: 1}},
		Bindings: []*snapshot.Binding{
			{ID: id(), ModelID: small.ID, HostID: a.ID, Shape: wire.ShapeOpenAI, UpstreamModel: "small-up", Enabled: true},
		},
		Policies: []*snapshot.Policy{policy},
	}
	return snapshot.Build(d, 3, time.Now()), policy, a1
}

func TestExplainer_IsTheRoutersExplanation(t *testing.T) {
	t.Parallel()
	snap, policy, _ := catalog()
	now := time.Now()
	body := []byte(`{"model":"small","messages":[{"role":"user","content":"hi"}]}`)
	got, err := bridge.Explainer(nil, nil)(controlapi.ExplainQuery{Snapshot: snap, Policy: policy, Inbound: wire.InboundChat, Body: body, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	r := routing.Router{}
	want, err := r.ExplainBody(snap, policy, uuid.Nil, "", wire.InboundChat, body, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.JSON) != string(raw) {
		t.Errorf("JSON\n got %s\nwant %s", got.JSON, raw)
	}
	if got.Refusal != "" {
		t.Errorf("refusal %q", got.Refusal)
	}
}

// explained decodes an Explained's JSON as the router's explanation.
func explained(t *testing.T, got controlapi.Explained) routing.Explanation {
	t.Helper()
	var e routing.Explanation
	if err := json.Unmarshal(got.JSON, &e); err != nil {
		t.Fatalf("explanation %s: %v", got.JSON, err)
	}
	return e
}

func TestExplainer_HeldKeysAreNotReady(t *testing.T) {
	t.Parallel()
	snap, policy, a1 := catalog()
	explain := func(held []controlapi.HeldKey) routing.ExplainedBinding {
		t.Helper()
		got, err := bridge.Explainer(nil, nil)(controlapi.ExplainQuery{Snapshot: snap, Policy: policy, Model: "small",
			Inbound: wire.InboundChat, Body: []byte(`{}`), Held: held, Now: time.Now()})
		if err != nil || got.Refusal != "" {
			t.Fatalf("explain with %+v: %+v, %v", held, got, err)
		}
		e := explained(t, got)
		if len(e.Candidates) != 1 {
			t.Fatalf("explain with %+v: %s", held, got.JSON)
		}
		return e.Candidates[0]
	}
	for _, c := range []struct {
		name string
		held []controlapi.HeldKey
		keys []string
	}{
		{"no breakers", nil, []string{"a1", "a2"}},
		{"none open", []controlapi.HeldKey{}, []string{"a1", "a2"}},
		{"the key held", []controlapi.HeldKey{{HostKeyID: a1.ID, SecretVersion: 1}}, []string{"a2"}},
		{"held for the binding's upstream model", []controlapi.HeldKey{{HostKeyID: a1.ID, SecretVersion: 1, Model: "small-up"}}, []string{"a2"}},
		{"held for another model", []controlapi.HeldKey{{HostKeyID: a1.ID, SecretVersion: 1, Model: "other-up"}}, []string{"a1", "a2"}},
		{"an older secret held", []controlapi.HeldKey{{HostKeyID: a1.ID, SecretVersion: 0}}, []string{"a1", "a2"}},
	} {
		b := explain(c.held)
		wantHeld := 2 - len(c.keys)
		if !reflect.DeepEqual(b.Keys, c.keys) || b.KeysHeld != wantHeld {
			t.Errorf("%s: keys %v, %d held; want %v, %d held", c.name, b.Keys, b.KeysHeld, c.keys, wantHeld)
		}
	}
}

func TestExplainer_RefusalIsAnExplanation(t *testing.T) {
	t.Parallel()
	snap, policy, _ := catalog()
	got, err := bridge.Explainer(nil, nil)(controlapi.ExplainQuery{Snapshot: snap, Policy: policy, Model: "nope",
		Inbound: wire.InboundChat, Body: []byte(`{}`), Header: http.Header{}, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if e := explained(t, got); got.Refusal == "" || e.Model != "nope" || len(e.Candidates) != 0 {
		t.Errorf("unknown model: %+v", got)
	}
}
