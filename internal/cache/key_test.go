package cache

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/snapshot"
)

var (
	policyA  = uuid.MustParse("00000000-0000-0000-0000-0000000000a1")
	projectA = uuid.MustParse("00000000-0000-0000-0000-0000000000b1")
	projectB = uuid.MustParse("00000000-0000-0000-0000-0000000000b2")
	modelA   = uuid.MustParse("00000000-0000-0000-0000-0000000000c1")
	modelB   = uuid.MustParse("00000000-0000-0000-0000-0000000000c2")
)

func request() *canonical.Request {
	t := 0.0
	return &canonical.Request{
		Model:       "gpt",
		System:      []canonical.Part{{Type: canonical.PartText, Text: "be brief"}},
		Messages:    []canonical.Message{{Role: canonical.RoleUser, Parts: []canonical.Part{{Type: canonical.PartText, Text: "hi"}}}},
		Temperature: &t,
	}
}

func mustKey(t *testing.T, s Scope, m snapshot.ID, c *canonical.Request) string {
	t.Helper()
	k, err := Key(s, m, c)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestKey_IgnoresWhatDoesNotChangeTheAnswer(t *testing.T) {
	s := Scope{Policy: policyA, Project: projectA}
	base := mustKey(t, s, modelA, request())
	for name, mod := range map[string]func(*canonical.Request){
		"stream":         func(r *canonical.Request) { r.Stream, r.IncludeUsage = true, true },
		"user":           func(r *canonical.Request) { r.User = "u-1" },
		"metadata":       func(r *canonical.Request) { r.Metadata = map[string]string{"a": "b"} },
		"model name":     func(r *canonical.Request) { r.Model = "gpt-alias" },
		"cache hints":    func(r *canonical.Request) { r.Messages[0].Parts[0].CacheHint = json.RawMessage(`{"type":"ephemeral"}`) },
		"system hint":    func(r *canonical.Request) { r.System[0].CacheHint = json.RawMessage(`{"type":"ephemeral"}`) },
		"cache key hint": func(r *canonical.Request) { r.PromptCacheKey, r.ServiceTier = "k", "flex" },
	} {
		r := request()
		mod(r)
		if got := mustKey(t, s, modelA, r); got != base {
			t.Errorf("%s changed the key", name)
		}
		if name == "cache hints" && r.Messages[0].Parts[0].CacheHint == nil {
			t.Error("Key cleared the caller's cache hint")
		}
	}
}

func TestKey_ChangesWithWhatChangesTheAnswer(t *testing.T) {
	s := Scope{Policy: policyA, Project: projectA}
	base := mustKey(t, s, modelA, request())
	one, seed := 1.0, int64(3)
	max := int64(5)
	for name, mod := range map[string]func(*canonical.Request){
		"text":        func(r *canonical.Request) { r.Messages[0].Parts[0].Text = "hello" },
		"system":      func(r *canonical.Request) { r.System = nil },
		"temperature": func(r *canonical.Request) { r.Temperature = &one },
		"seed":        func(r *canonical.Request) { r.Seed = &seed },
		"max tokens":  func(r *canonical.Request) { r.MaxOutputTokens = &max },
		"tools":       func(r *canonical.Request) { r.Tools = []canonical.Tool{{Name: "f"}} },
		"stop":        func(r *canonical.Request) { r.Stop = []string{"x"} },
	} {
		r := request()
		mod(r)
		if got := mustKey(t, s, modelA, r); got == base {
			t.Errorf("%s did not change the key", name)
		}
	}
	if mustKey(t, s, modelB, request()) == base {
		t.Error("another model shares the key")
	}
}

func TestKey_ScopeIsAtLeastTheProject(t *testing.T) {
	r := request()
	a := mustKey(t, Scope{Policy: policyA, Project: projectA}, modelA, r)
	b := mustKey(t, Scope{Policy: policyA, Project: projectB}, modelA, r)
	if a == b {
		t.Fatal("two projects share a key")
	}
	k1 := mustKey(t, Scope{Policy: policyA, Project: projectA, Kind: snapshot.CacheScopeRelayKey, Value: "k1"}, modelA, r)
	k2 := mustKey(t, Scope{Policy: policyA, Project: projectA, Kind: snapshot.CacheScopeRelayKey, Value: "k2"}, modelA, r)
	h1 := mustKey(t, Scope{Policy: policyA, Project: projectA, Kind: snapshot.CacheScopeHeader, Value: "secret-tenant"}, modelA, r)
	if k1 == k2 || k1 == a || h1 == a {
		t.Error("a narrowed scope shares keys")
	}
	if strings.Contains(h1, "secret-tenant") {
		t.Error("the header's value is in the key")
	}
}

func TestDeterministic(t *testing.T) {
	zero, one, seed := 0.0, 0.7, int64(1)
	for _, tc := range []struct {
		temp *float64
		seed *int64
		want bool
	}{{nil, nil, false}, {&zero, nil, true}, {&one, nil, false}, {&one, &seed, true}, {nil, &seed, true}} {
		if got := Deterministic(&canonical.Request{Temperature: tc.temp, Seed: tc.seed}); got != tc.want {
			t.Errorf("temperature %v seed %v: %v, want %v", tc.temp, tc.seed, got, tc.want)
		}
	}
}
