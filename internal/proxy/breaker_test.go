package proxy_test

import (
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// tenant adds a second team, project, policy and relay key (plain) granted
// the given models, and returns the header that calls as it.
func (f *fixture) tenant(plain string, models ...*snapshot.Model) map[string]string {
	team := &snapshot.Team{ID: f.id(), Slug: "team-2"}
	project := &snapshot.Project{ID: f.id(), TeamID: team.ID, Slug: "proj-2"}
	policy := &snapshot.Policy{ID: f.id(), Slug: "other", AllHostKeys: true, Models: map[snapshot.ID]struct{}{},
		KeyStrategy: snapshot.StrategyPrioritized, MaxAttempts: 3, Affinity: snapshot.AffinityOff}
	for _, m := range models {
		policy.Models[m.ID] = struct{}{}
	}
	sa := &snapshot.ServiceAccount{ID: f.id(), ProjectID: project.ID, Slug: "app-2", PolicyID: policy.ID}
	f.data.Teams = append(f.data.Teams, team)
	f.data.Projects = append(f.data.Projects, project)
	f.data.Policies = append(f.data.Policies, policy)
	f.data.ServiceAccounts = append(f.data.ServiceAccounts, sa)
	f.data.RelayKeys = append(f.data.RelayKeys, &snapshot.RelayKey{
		ID: f.id(), Hash: sha256.Sum256([]byte(plain)), DisplayPrefix: plain[:10], ProjectID: project.ID, ServiceAccountID: sa.ID,
	})
	f.secrets = append(f.secrets, plain)
	return map[string]string{"Authorization": "Bearer " + plain}
}

// holdsOf lists the breakers of one host key.
func (f *fixture) holdsOf(k *snapshot.HostKey) []keypool.KeyState {
	var out []keypool.KeyState
	for _, s := range f.h.Breakers().States(f.clock.Now()) {
		if s.Ref.ID == k.ID {
			out = append(out, s)
		}
	}
	return out
}

func chatFor(model string) string {
	return `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`
}

// One tenant calling a broken model (500s) does not make another tenant's
// healthy model on the same host key fail.
func TestBreakers_BrokenModelDoesNotHoldTheKeyForAnotherTenant(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	h := f.host("openai")
	k := f.key(h, "shared", "sk-up-shared-key")
	broken := f.model("broken", true)
	f.bind(broken, h, wire.ShapeOpenAI, "broken-fault-500") // the mock fails this upstream model
	healthy := f.model("healthy", false)
	f.bind(healthy, h, wire.ShapeOpenAI, "gpt-4o-mini")
	other := f.tenant("sk-wr-test-tenant2-0123456789abcdef", healthy)
	f.start()

	for i := range 5 {
		resp, body := f.post("/v1/chat/completions", chatFor("broken"), nil)
		if resp.StatusCode != 502 && resp.StatusCode != 503 {
			t.Fatalf("broken #%d: %d %s", i, resp.StatusCode, body)
		}
		resp, body = f.post("/v1/chat/completions", chatFor("healthy"), other)
		if resp.StatusCode != 200 || !strings.Contains(body, "Hello from gpt-4o-mini") {
			t.Fatalf("the other tenant's healthy model, after broken #%d: %d %s", i, resp.StatusCode, body)
		}
	}
	holds := f.holdsOf(k)
	if len(holds) != 1 || holds[0].Scope != keypool.ScopeModel || holds[0].Model != "broken-fault-500" || holds[0].State != keypool.StateOpen || holds[0].LastReason != "500" {
		t.Fatalf("holds %+v, want (shared, broken-fault-500) open only", holds)
	}
}

// A 404 model not found holds that (key, model) and moves to the next key;
// the key still serves other models.
func TestBreakers_ModelNotFoundHoldsThatModelOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	h := f.host("openai")
	k1 := f.key(h, "k1", "sk-up-k1-key")
	k2 := f.key(h, "k2", "sk-up-k2-key")
	f.bind(f.model("gone", true), h, wire.ShapeOpenAI, "gpt-gone")
	f.bind(f.model("here", true), h, wire.ShapeOpenAI, "gpt-4o-mini")
	f.start()

	resp, body := f.post("/v1/chat/completions", chatFor("gone"), map[string]string{testFault: "404"})
	if e := decodeError(t, body); resp.StatusCode != 502 || resp.Header.Get("X-Relay-Attempts") != "2" || !strings.Contains(e.Error.Message, "404 model not found") {
		t.Fatalf("%d attempts=%s %s", resp.StatusCode, resp.Header.Get("X-Relay-Attempts"), body)
	}
	for _, k := range []*snapshot.HostKey{k1, k2} {
		if holds := f.holdsOf(k); len(holds) != 1 || holds[0].Model != "gpt-gone" || holds[0].Scope != keypool.ScopeModel {
			t.Fatalf("%s holds %+v", k.Slug, holds)
		}
	}
	resp, body = f.post("/v1/chat/completions", chatFor("here"), nil)
	if resp.StatusCode != 200 || resp.Header.Get("X-Relay-Attempts") != "1" {
		t.Fatalf("another model on the same keys: %d %s", resp.StatusCode, body)
	}
	if rec := f.rec.next(t); rec.Status != 502 {
		t.Fatalf("record %+v", rec)
	}
	if rec := f.rec.next(t); rec.HostKeyID != k1.ID {
		t.Errorf("served by %v, want k1", rec.HostKeyID)
	}
}

// A stream that breaks after its first byte reaches the caller never holds
// the key, and one break alone (a network blip) holds nothing: the next
// caller of the model on its only key is served, not answered 503. Five
// breaks in a row hold the model, still not the key.
func TestBreakers_MidStreamResetDoesNotHoldTheKey(t *testing.T) {
	t.Parallel()
	stream := `{"model":"streamy","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	for _, fault := range []string{"reset-2", "stall-2", "midstream-2"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			h := f.host("openai", func(h *snapshot.Host) { h.IdleTimeout = 100 * time.Millisecond }) // for the stall
			k := f.key(h, "only", "sk-up-only-key")
			f.bind(f.model("streamy", true), h, wire.ShapeOpenAI, "gpt-4o-mini")
			f.bind(f.model("other", true), h, wire.ShapeOpenAI, "gpt-4o")
			f.start()
			broken := map[string]string{testFault: fault}
			resp, body := f.post("/v1/chat/completions", stream, broken)
			if resp.StatusCode != 200 || (fault != "midstream-2" && !strings.Contains(body, "stream broke")) {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if holds := f.holdsOf(k); len(holds) != 0 {
				t.Fatalf("one break held %+v", holds)
			}
			if resp, body := f.post("/v1/chat/completions", stream, nil); resp.StatusCode != 200 || !strings.Contains(body, "[DONE]") {
				t.Fatalf("the next caller of the model after one break: %d %s", resp.StatusCode, body)
			}
			for range 5 {
				f.post("/v1/chat/completions", stream, broken)
			}
			if !f.h.Breakers().Ready(keypool.Ref(k), "", f.clock.Now()) {
				t.Fatalf("breaks held the key: %+v", f.holdsOf(k))
			}
			if resp, body := f.post("/v1/chat/completions", chatFor("other"), nil); resp.StatusCode != 200 {
				t.Fatalf("another model on the key: %d %s", resp.StatusCode, body)
			}
			holds := f.holdsOf(k)
			if fault != "midstream-2" && (len(holds) != 1 || holds[0].Scope != keypool.ScopeModel || holds[0].Model != "gpt-4o-mini") {
				t.Errorf("holds %+v after five breaks, want (only, gpt-4o-mini)", holds)
			}
			if fault == "midstream-2" && len(holds) != 0 {
				t.Errorf("an error the upstream sent in its stream is an answer, yet: %+v", holds)
			}
		})
	}
}

// A half-open (key, model) lets one probe through; meanwhile callers of
// that model go to another key, and callers of other models keep the key.
func TestBreakers_HalfOpenAdmitsOneProbe(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test-Gate") != "" {
			arrived <- struct{}{}
			<-release
		}
		f.mock.ServeHTTP(w, r)
	}))
	t.Cleanup(gate.Close)
	h := f.host("openai", func(h *snapshot.Host) {
		h.BaseURL = gate.URL
		h.ForwardHeaders = append(h.ForwardHeaders, "X-Test-Gate")
	})
	k1 := f.key(h, "k1", "sk-up-k1-key")
	f.key(h, "k2", "sk-up-k2-key")
	f.bind(f.model("m", true), h, wire.ShapeOpenAI, "gpt-4o-mini")
	f.bind(f.model("n", true), h, wire.ShapeOpenAI, "gpt-4o")
	f.start()
	defer close(release)

	// (k1, gpt-4o-mini) failed a second ago: half-open now.
	b := f.h.Breakers()
	tk, _ := b.Acquire(keypool.Ref(k1), "gpt-4o-mini", f.clock.Now())
	b.Report(tk, keypool.Result{Outcome: keypool.OutcomeFailure, Scope: keypool.ScopeModel, Reason: "500"}, f.clock.Now())
	f.clock.Advance(time.Second)

	probe := make(chan int, 1) // its status; 0 when it failed
	go func() {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, f.srv.URL+"/v1/chat/completions", strings.NewReader(chatFor("m")))
		req.Header.Set("Authorization", "Bearer "+relayKey)
		req.Header.Set("X-Test-Gate", "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			probe <- 0
			return
		}
		resp.Body.Close()
		probe <- resp.StatusCode
	}()
	select {
	case <-arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("the probe did not reach the upstream")
	}
	holds := f.holdsOf(k1)
	if len(holds) != 1 || holds[0].State != keypool.StateHalfOpen || !holds[0].Probing {
		t.Fatalf("holds while probing %+v", holds)
	}
	// Meanwhile: m goes to k2, n stays on k1; nobody gets a 503.
	for _, tc := range []struct{ model, key string }{{"m", "sk-up-k2-key"}, {"n", "sk-up-k1-key"}, {"m", "sk-up-k2-key"}} {
		before := len(f.requests())
		resp, body := f.post("/v1/chat/completions", chatFor(tc.model), nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%s while the probe is out: %d %s", tc.model, resp.StatusCode, body)
		}
		up := f.requests()[before:]
		if len(up) != 1 || up[0].Header.Get("Authorization") != "Bearer "+tc.key {
			t.Fatalf("%s was served by %d upstream requests, want one with %s", tc.model, len(up), tc.key)
		}
	}
	release <- struct{}{}
	if status := <-probe; status != 200 {
		t.Fatalf("probe %d", status)
	}
	if holds := f.holdsOf(k1); len(holds) != 0 {
		t.Fatalf("after the probe: %+v", holds)
	}
	var n int
	for _, r := range f.requests() {
		if r.Header.Get("Authorization") == "Bearer sk-up-k1-key" && r.Model == "gpt-4o-mini" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("k1 saw %d requests for gpt-4o-mini, want the probe only", n)
	}
}

// A model with two bindings whose first host's keys all fail with 500
// tries the second binding before the caller sees a failure.
func TestBreakers_FailoverReachesEveryBinding(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		maxAttempts int
		wantFirst   int // attempts on the first binding
	}{{3, 2}, {1, 1}, {5, 3}} {
		f := newFixture(t)
		f.policy.MaxAttempts = tc.maxAttempts
		a := f.host("primary")
		for _, s := range []string{"a1", "a2", "a3"} {
			f.key(a, s, "sk-up-fault-500-"+s)
		}
		b := f.host("secondary")
		f.key(b, "b", "sk-up-secondary-ok")
		m := f.model("gpt-test", true)
		f.bind(m, a, wire.ShapeOpenAI, "primary-model")
		f.bind(m, b, wire.ShapeOpenAI, "secondary-model")
		f.start()

		resp, body := f.post("/v1/chat/completions", chatBody, nil)
		want := tc.wantFirst + 1
		if resp.StatusCode != 200 || resp.Header.Get("X-Relay-Host") != "secondary" || resp.Header.Get("X-Relay-Attempts") != strconv.Itoa(want) {
			t.Fatalf("max_attempts %d: %d host=%s attempts=%s %s", tc.maxAttempts, resp.StatusCode,
				resp.Header.Get("X-Relay-Host"), resp.Header.Get("X-Relay-Attempts"), body)
		}
		var first int
		for _, r := range f.requests() {
			if r.Model == "primary-model" {
				first++
			}
		}
		if first != tc.wantFirst {
			t.Errorf("max_attempts %d: %d attempts on the first binding, want %d", tc.maxAttempts, first, tc.wantFirst)
		}
	}
}

// A 401 holds (key, model) only: the key keeps serving its other models.
// A second model refused on the key within the window holds the key, and
// that hold is probed again after a backoff that doubles (30 s, then 60 s).
func TestBreakers_AuthHoldsTheModelThenTheKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	h := f.host("openai")
	k := f.key(h, "only", "sk-up-only-key")
	f.bind(f.model("gpt-test", true), h, wire.ShapeOpenAI, "gpt-4o-mini")
	f.bind(f.model("gpt-other", true), h, wire.ShapeOpenAI, "gpt-4o")
	f.bind(f.model("gpt-third", true), h, wire.ShapeOpenAI, "gpt-4.1")
	f.start()
	status := func(model string, header map[string]string) int {
		resp, _ := f.post("/v1/chat/completions", chatFor(model), header)
		return resp.StatusCode
	}
	unauthorized := map[string]string{testFault: "401"}

	if s := status("gpt-test", unauthorized); s != 502 {
		t.Fatalf("401: %d", s)
	}
	if holds := f.holdsOf(k); len(holds) != 1 || holds[0].Scope != keypool.ScopeModel || holds[0].Model != "gpt-4o-mini" || holds[0].State != keypool.StateAuthFailed {
		t.Fatalf("holds %+v", holds)
	}
	if s := status("gpt-other", nil); s != 200 {
		t.Fatalf("another model on the key after one model's 401: %d", s)
	}
	// A second model refused within the window: the key is held for all.
	f.clock.Advance(10 * time.Second)
	if s := status("gpt-other", map[string]string{testFault: "403"}); s != 502 {
		t.Fatalf("403: %d", s)
	}
	if s := status("gpt-third", nil); s != 503 {
		t.Fatalf("a third model once the key is held: %d", s)
	}
	// The key's probe after 30 s fails again: the next waits 60 s.
	f.clock.Advance(30 * time.Second)
	if s := status("gpt-third", unauthorized); s != 502 {
		t.Fatalf("probe: %d", s)
	}
	f.clock.Advance(59 * time.Second)
	if s := status("gpt-third", nil); s != 503 {
		t.Fatalf("59 s into the second hold: %d", s)
	}
	f.clock.Advance(time.Second)
	if s := status("gpt-third", nil); s != 200 {
		t.Fatalf("the probe after 60 s: %d", s)
	}
	if holds := f.holdsOf(k); len(holds) != 2 {
		t.Fatalf("after a good probe of the key, want the two models' own holds left: %+v", holds)
	}
}
