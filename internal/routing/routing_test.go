package routing

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

var now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type catalog struct {
	data   snapshot.Data
	policy *snapshot.Policy
	n      byte
}

func (c *catalog) id() uuid.UUID { c.n++; return uuid.UUID{0x10, c.n} }

func (c *catalog) host(slug string, enabled bool) *snapshot.Host {
	h := &snapshot.Host{ID: c.id(), Slug: slug, Enabled: enabled, BaseURL: "http://" + slug}
	c.data.Hosts = append(c.data.Hosts, h)
	return h
}

func (c *catalog) key(h *snapshot.Host, slug string, pos int, mod func(*snapshot.HostKey)) *snapshot.HostKey {
	k := &snapshot.HostKey{ID: c.id(), HostID: h.ID, Slug: slug, Secret: snapshot.NewSecret("s-" + slug), SecretVersion: 1, Position: pos, Enabled: true, Usable: true}
	if mod != nil {
		mod(k)
	}
	c.data.HostKeys = append(c.data.HostKeys, k)
	return k
}

func (c *catalog) model(name string) *snapshot.Model {
	m := &snapshot.Model{ID: c.id(), Name: name}
	c.data.Models = append(c.data.Models, m)
	return m
}

func (c *catalog) bind(m *snapshot.Model, h *snapshot.Host, shape wire.Shape, pos int, enabled bool) *snapshot.Binding {
	b := &snapshot.Binding{ID: c.id(), ModelID: m.ID, HostID: h.ID, Shape: shape, UpstreamModel: "up-" + m.Name, Position: pos, Enabled: enabled}
	c.data.Bindings = append(c.data.Bindings, b)
	return b
}

// setup builds a catalog with two chat hosts, an Anthropic host, and
// models bound to them in interesting ways.
func setup() (*snapshot.Snapshot, *catalog) {
	c := &catalog{}
	a := c.host("openai-a", true)
	b := c.host("openai-b", true)
	off := c.host("off", false)
	anth := c.host("anthropic", true)
	c.key(a, "a1", 0, nil)
	c.key(a, "a2", 1, nil)
	c.key(a, "a-disabled", 2, func(k *snapshot.HostKey) { k.Enabled = false })
	c.key(a, "a-unusable", 3, func(k *snapshot.HostKey) { k.Usable = false; k.Problem = "env var missing" })
	c.key(b, "b1", 0, nil)
	c.key(off, "off1", 0, nil)
	c.key(anth, "an1", 0, nil)

	gpt := c.model("gpt")
	c.bind(gpt, b, wire.ShapeOpenAI, 2, true)
	c.bind(gpt, a, wire.ShapeOpenAI, 1, true)
	c.bind(gpt, off, wire.ShapeOpenAI, 0, true)
	c.bind(gpt, anth, wire.ShapeAnthropic, 3, true)
	claude := c.model("claude")
	c.bind(claude, anth, wire.ShapeAnthropic, 0, true)
	dead := c.model("dead")
	c.bind(dead, a, wire.ShapeOpenAI, 0, false)
	at := c.model("vendor@2024")
	c.bind(at, a, wire.ShapeOpenAI, 0, true)
	c.model("ungranted")

	c.policy = &snapshot.Policy{ID: c.id(), Slug: "p", AllHostKeys: true, Models: map[snapshot.ID]struct{}{}}
	for _, m := range c.data.Models {
		if m.Name != "ungranted" {
			c.policy.Models[m.ID] = struct{}{}
		}
	}
	return snapshot.Build(&c.data, 1, now), c
}

func hosts(p *Plan) []string {
	var out []string
	for _, c := range p.Bindings {
		if c.Skip == Kept {
			for _, k := range c.Keys {
				out = append(out, c.Host.Slug+"/"+k.Slug)
			}
		}
	}
	return out
}

func TestRoute_OrdersBindingsAndKeys(t *testing.T) {
	t.Parallel()
	snap, c := setup()
	var r Router
	var p Plan
	if err := r.Route(snap, c.policy, "gpt", wire.InboundChat, now, &p); err != nil {
		t.Fatal(err)
	}
	got := hosts(&p)
	want := []string{"openai-a/a1", "openai-a/a2", "openai-b/b1"}
	if len(got) != len(want) {
		t.Fatalf("candidates %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("candidates %v, want %v", got, want)
		}
	}
	skips := map[string]Skip{}
	for _, b := range p.Bindings {
		skips[b.Host.Slug] = b.Skip
		if b.Host.Slug == "openai-a" && (b.KeysDisabled != 1 || b.KeysUnusable != 1) {
			t.Errorf("key counts %+v", b)
		}
	}
	if skips["off"] != HostDisabled || skips["anthropic"] != ShapeNotServed {
		t.Errorf("skips %v", skips)
	}
}

func TestRoute_Pinning(t *testing.T) {
	t.Parallel()
	snap, c := setup()
	var r Router
	var p Plan
	if err := r.Route(snap, c.policy, "gpt@openai-b", wire.InboundChat, now, &p); err != nil {
		t.Fatal(err)
	}
	if got := hosts(&p); len(got) != 1 || got[0] != "openai-b/b1" || p.Pinned != "openai-b" {
		t.Fatalf("pinned candidates %v", got)
	}
	if err := r.Route(snap, c.policy, "vendor@2024", wire.InboundChat, now, &p); err != nil || p.Model.Name != "vendor@2024" {
		t.Fatalf("a model name with '@' did not resolve: %v", err)
	}
}

func TestRoute_Errors(t *testing.T) {
	t.Parallel()
	snap, c := setup()
	breakers := keypool.NewMemory(keypool.BreakerConfig{})
	for _, k := range c.data.HostKeys {
		if k.Slug == "an1" {
			tk, _ := breakers.Acquire(keypool.Ref(k), "", now)
			breakers.Report(tk, keypool.Result{Outcome: keypool.OutcomeFailure}, now)
		}
	}
	tests := []struct {
		name   string
		model  string
		in     wire.Inbound
		policy *snapshot.Policy
		want   error
	}{
		{"unknown model", "nope", wire.InboundChat, c.policy, wire.ErrModelNotFound},
		{"unknown host", "gpt@nowhere", wire.InboundChat, c.policy, wire.ErrModelNotFound},
		{"not bound to pinned host", "claude@openai-a", wire.InboundMessages, c.policy, wire.ErrModelNotFound},
		{"not granted", "ungranted", wire.InboundChat, c.policy, wire.ErrModelNotFound},
		{"no policy", "gpt", wire.InboundChat, nil, wire.ErrModelNotFound},
		{"shape not served", "claude", wire.InboundChat, c.policy, wire.ErrShapeNotServed},
		{"only disabled bindings", "dead", wire.InboundChat, c.policy, wire.ErrNoUsableHostKey},
		{"no key granted", "gpt", wire.InboundChat, &snapshot.Policy{AllModels: true}, wire.ErrNoUsableHostKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := Router{Breakers: breakers}
			var p Plan
			err := r.Route(snap, tt.policy, tt.model, tt.in, now, &p)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestRoute_SupportsSeam(t *testing.T) {
	t.Parallel()
	snap, c := setup()
	r := Router{Supports: func(in wire.Inbound, up wire.Shape) bool { return true }}
	var p Plan
	if err := r.Route(snap, c.policy, "claude", wire.InboundChat, now, &p); err != nil {
		t.Fatalf("a translator-aware Supports did not open the Anthropic binding: %v", err)
	}
}

func TestRoute_DoesNotAllocate(t *testing.T) {
	snap, c := setup()
	r := Router{Breakers: keypool.NewMemory(keypool.BreakerConfig{})}
	var p Plan
	allocs := testing.AllocsPerRun(100, func() {
		if err := r.Route(snap, c.policy, "gpt@openai-a", wire.InboundChat, now, &p); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Route allocates %v times per call", allocs)
	}
}

func BenchmarkRoute(b *testing.B) {
	snap, c := setup()
	r := Router{Breakers: keypool.NewMemory(keypool.BreakerConfig{})}
	var p Plan
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Route(snap, c.policy, "gpt", wire.InboundChat, now, &p); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRoute_ModelHoldKeepsTheKeyForOtherModels(t *testing.T) {
	t.Parallel()
	snap, c := setup()
	breakers := keypool.NewMemory(keypool.BreakerConfig{})
	for _, k := range c.data.HostKeys {
		if k.Slug == "a1" {
			tk, _ := breakers.Acquire(keypool.Ref(k), "up-gpt", now)
			breakers.Report(tk, keypool.Result{Outcome: keypool.OutcomeFailure, Scope: keypool.ScopeModel}, now)
		}
	}
	r := Router{Breakers: breakers}
	var p Plan
	if err := r.Route(snap, c.policy, "gpt@openai-a", wire.InboundChat, now, &p); err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, b := range p.Bindings {
		held += b.KeysHeld
	}
	if got := hosts(&p); len(got) != 1 || got[0] != "openai-a/a2" || held != 1 {
		t.Fatalf("gpt candidates %v (%d held), want a1 held for up-gpt", got, held)
	}
	if err := r.Route(snap, c.policy, "vendor@2024", wire.InboundChat, now, &p); err != nil {
		t.Fatal(err)
	}
	if got := hosts(&p); len(got) != 2 || got[0] != "openai-a/a1" {
		t.Fatalf("another model on the same key: %v, want a1 and a2", got)
	}
}
