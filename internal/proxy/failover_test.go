package proxy_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	oaopt "github.com/openai/openai-go/v3/option"

	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// twoKeys sets up one host whose first key carries the mock fault and
// whose second key works.
func twoKeys(t *testing.T, fault string) (*fixture, *snapshot.HostKey, *snapshot.HostKey) {
	f := newFixture(t)
	h := f.host("openai")
	bad := f.key(h, "bad", "sk-up-fault-"+fault+"-first-key")
	good := f.key(h, "good", "sk-up-good-second-key")
	f.bind(f.model("gpt-test", true), h, wire.ShapeOpenAI, "gpt-4o-mini")
	f.start()
	return f, bad, good
}

func TestProxy_FailsOverToTheNextKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fault string
		state keypool.State // the first key's breaker afterwards; "" = closed
		scope keypool.Scope // what it holds: the key, or (key, gpt-4o-mini)
	}{
		// One server error or network failure is not evidence enough to
		// hold anything (it takes five in a row): the next key is tried all
		// the same.
		{"500", "", 0},
		{"503", "", 0},
		{"529", "", 0},
		{"429", "", 0}, // Retry-After: 1 is short: move on without cooling
		{"429-30", keypool.StateCooling, keypool.ScopeModel},
		{"quota", keypool.StateQuotaExhausted, keypool.ScopeKey},
		// A 401/403 holds the model on the key until a second model fails.
		{"401", keypool.StateAuthFailed, keypool.ScopeModel},
		{"403", keypool.StateAuthFailed, keypool.ScopeModel},
		{"reset-0", "", 0}, // the request went out: not the host's fault, and one blip
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			t.Parallel()
			for _, stream := range []bool{false, true} {
				f, bad, good := twoKeys(t, tt.fault)
				body := `{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}`
				if stream {
					body = `{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"hi"}]}`
				}
				resp, out := f.post("/v1/chat/completions", body, nil)
				if resp.StatusCode != 200 || resp.Header.Get("X-Relay-Attempts") != "2" {
					t.Fatalf("stream=%v: %d attempts=%s %s", stream, resp.StatusCode, resp.Header.Get("X-Relay-Attempts"), out)
				}
				// Not a byte of the failed attempt reached the caller.
				for _, trace := range []string{`"error"`, "Retry-After", "fault-", "rate limit", "overloaded", "Incorrect API key", "quota"} {
					if strings.Contains(out, trace) {
						t.Errorf("stream=%v: the caller saw %q: %s", stream, trace, out)
					}
				}
				if resp.Header.Get("Retry-After") != "" || resp.Header.Get("X-Ratelimit-Remaining-Requests") == "0" {
					t.Errorf("failed attempt's headers leaked: %v", resp.Header)
				}
				if !strings.Contains(out, "Hello") || !strings.Contains(out, "gpt-4o-mini") || (stream && !strings.HasSuffix(out, "data: [DONE]\n\n")) {
					t.Errorf("stream=%v: body %s", stream, out)
				}
				up := f.requests()
				if len(up) != 2 || up[0].Header.Get("Authorization") != "Bearer "+bad.Secret.Reveal() || up[1].Header.Get("Authorization") != "Bearer "+good.Secret.Reveal() {
					t.Fatalf("stream=%v: upstream saw %d requests", stream, len(up))
				}
				var got keypool.State
				for _, s := range f.h.Breakers().States(f.clock.Now()) {
					if s.Ref.ID == bad.ID {
						got = s.State
						if s.Scope != tt.scope || (s.Scope == keypool.ScopeModel) != (s.Model == "gpt-4o-mini") {
							t.Errorf("stream=%v: the first key's hold is %s-scoped for %q", stream, s.Scope, s.Model)
						}
					}
					if s.Ref.ID == good.ID {
						t.Errorf("the good key's breaker is %s", s.State)
					}
				}
				if got != tt.state {
					t.Errorf("stream=%v: first key's breaker %q, want %q", stream, got, tt.state)
				}
				if rec := f.rec.next(t); rec.Attempts != 2 || rec.HostKeyID != good.ID || rec.Status != 200 {
					t.Errorf("record %+v", rec)
				}
			}
		})
	}
}

func TestProxy_FailsOverToTheNextBinding(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.host("primary")
	f.key(a, "a", "sk-up-fault-500-primary")
	b := f.host("secondary", func(h *snapshot.Host) { h.BaseURL = f.up.URL + "/v1/" })
	f.key(b, "b", "sk-up-secondary-ok")
	m := f.model("gpt-test", true)
	f.bind(m, a, wire.ShapeOpenAI, "primary-model")
	f.bind(m, b, wire.ShapeOpenAI, "secondary-model")
	f.start()

	var httpResp *http.Response
	resp, err := f.openai().Chat.Completions.New(t.Context(), chatParams("gpt-test"), oaopt.WithResponseInto(&httpResp))
	if err != nil {
		t.Fatal(err)
	}
	if httpResp.Header.Get("X-Relay-Host") != "secondary" || !strings.Contains(resp.Choices[0].Message.Content, "secondary-model") {
		t.Errorf("served by %s: %q", httpResp.Header.Get("X-Relay-Host"), resp.Choices[0].Message.Content)
	}
	if up := f.requests(); len(up) != 2 || up[1].Path != "/v1/chat/completions" {
		t.Errorf("upstream %+v (a base URL ending in /v1/ must not double it)", up)
	}
	if !strings.Contains(f.logs.String(), "failed_attempts=\"primary/a: 500") {
		t.Errorf("the log does not name the failed attempt:\n%s", f.logs.String())
	}
}

func TestProxy_EveryKeyFails(t *testing.T) {
	t.Parallel()
	// A short first-byte timeout only where the faults are slow: on a
	// loaded machine it would cut attempts that fail at once, and the test
	// would see timeouts where it expects statuses.
	setup := func(t *testing.T, firstByte time.Duration, faults ...string) *fixture {
		f := newFixture(t)
		a := f.host("east", func(h *snapshot.Host) { h.FirstByteTimeout = firstByte })
		b := f.host("west", func(h *snapshot.Host) { h.FirstByteTimeout = firstByte })
		m := f.model("gpt-test", true)
		f.bind(m, a, wire.ShapeOpenAI, "m")
		f.bind(m, b, wire.ShapeOpenAI, "m")
		for i, fault := range faults {
			h := a
			if i%2 == 1 {
				h = b
			}
			f.key(h, "k"+fault, "sk-up-fault-"+fault+"-"+string(rune('a'+i)))
		}
		f.start()
		return f
	}

	t.Run("502 lists what was tried", func(t *testing.T) {
		t.Parallel()
		f := setup(t, 0, "500", "503")
		resp, body := f.post("/v1/chat/completions", chatBody, nil)
		e := decodeError(t, body)
		if resp.StatusCode != 502 || e.Error.Code != "upstream_error" || e.Error.Type != "server_error" {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		if !strings.Contains(e.Error.Message, "east: 500") || !strings.Contains(e.Error.Message, "west: 503") {
			t.Errorf("message %q does not list hosts and statuses", e.Error.Message)
		}
		if resp.Header.Get("X-Relay-Attempts") != "2" {
			t.Errorf("attempts %s", resp.Header.Get("X-Relay-Attempts"))
		}
		if rec := f.rec.next(t); rec.Status != 502 || rec.ErrorKind != "upstream_error" || rec.Attempts != 2 {
			t.Errorf("record %+v", rec)
		}
	})

	t.Run("anthropic shape", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		h := f.host("anth")
		f.key(h, "k", "sk-up-fault-529-anth")
		f.bind(f.model("claude-test", true), h, wire.ShapeAnthropic, "claude")
		f.start()
		resp, body := f.post("/v1/messages", messagesBody, nil)
		if e := decodeError(t, body); resp.StatusCode != 502 || e.Type != "error" || e.Error.Type != "api_error" || !strings.Contains(e.Error.Message, "anth: 529") {
			t.Errorf("%d %s", resp.StatusCode, body)
		}
	})

	t.Run("attempt cap", func(t *testing.T) {
		t.Parallel()
		f := setup(t, 0, "500", "500", "502", "503")
		resp, _ := f.post("/v1/chat/completions", chatBody, nil)
		if resp.StatusCode != 502 || len(f.requests()) != 3 {
			t.Errorf("%d after %d upstream requests, want 502 after 3", resp.StatusCode, len(f.requests()))
		}
	})

	t.Run("all rate limited", func(t *testing.T) {
		t.Parallel()
		f := setup(t, 0, "429-30", "429-20")
		resp, body := f.post("/v1/chat/completions", chatBody, nil)
		if e := decodeError(t, body); resp.StatusCode != 429 || e.Error.Code != "upstream_rate_limited" || resp.Header.Get("Retry-After") != "20" {
			t.Errorf("%d Retry-After=%q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	})

	t.Run("total timeout", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		h := f.host("slow", func(h *snapshot.Host) { h.TotalTimeout = 50 * time.Millisecond })
		f.key(h, "k", "sk-up-fault-slow-3000-total")
		f.bind(f.model("gpt-test", true), h, wire.ShapeOpenAI, "m")
		f.start()
		resp, body := f.post("/v1/chat/completions", chatBody, nil)
		if e := decodeError(t, body); resp.StatusCode != 504 || !strings.Contains(e.Error.Message, "slow: total timeout") {
			t.Errorf("%d %s", resp.StatusCode, body)
		}
	})

	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		closed := httptest.NewServer(http.NotFoundHandler())
		closed.Close()
		dead := f.host("dead", func(h *snapshot.Host) { h.BaseURL = closed.URL })
		f.key(dead, "k", "sk-up-dead")
		live := f.host("live")
		f.key(live, "k", "sk-up-live")
		m := f.model("gpt-test", true)
		f.bind(m, dead, wire.ShapeOpenAI, "m")
		f.bind(m, live, wire.ShapeOpenAI, "m")
		f.start()
		resp, body := f.post("/v1/chat/completions", chatBody, nil)
		if resp.StatusCode != 200 || resp.Header.Get("X-Relay-Host") != "live" {
			t.Errorf("%d %s", resp.StatusCode, body)
		}
		if !strings.Contains(f.logs.String(), "dead/k: connection refused") {
			t.Errorf("log:\n%s", f.logs.String())
		}
	})

	t.Run("timeouts give 504", func(t *testing.T) {
		t.Parallel()
		// The timeout is long enough for the request to reach the mock
		// on a loaded machine (the test waits for both to be canceled
		// there), and far shorter than the faults' delay.
		f := setup(t, 500*time.Millisecond, "slow-30000", "slow-30000")
		client := f.openai()
		_, err := client.Chat.Completions.New(t.Context(), chatParams("gpt-test"))
		var oe *openai.Error
		if !errors.As(err, &oe) || oe.StatusCode != 504 || oe.Code != "upstream_timeout" || !strings.Contains(oe.Message, "first-byte timeout") {
			t.Fatalf("err %v", err)
		}
		// Both attempts were cut, not waited out.
		f.waitFor(func(r mockupstream.Request) bool {
			return r.Canceled && strings.Contains(r.Header.Get("Authorization"), "-b")
		})
	})
}

func TestProxy_UpstreamClientErrorsPassThrough(t *testing.T) {
	t.Parallel()
	// A 404 that says the model does not exist is not here: it is the
	// binding's trouble, and holds (key, model) (breaker_test.go).
	for _, status := range []string{"400", "413", "422"} {
		t.Run(status, func(t *testing.T) {
			t.Parallel()
			// The fault comes from the caller's testFault header, which
			// the fixture's hosts forward.
			f2 := newFixture(t)
			h := f2.host("openai")
			f2.key(h, "k1", "sk-up-one")
			f2.key(h, "k2", "sk-up-two")
			f2.bind(f2.model("gpt-test", true), h, wire.ShapeOpenAI, "gpt-4o-mini")
			f2.start()
			resp, body := f2.post("/v1/chat/completions", chatBody, map[string]string{testFault: status})
			if got := resp.Status[:3]; got != status {
				t.Fatalf("status %s, want %s: %s", got, status, body)
			}
			e := decodeError(t, body)
			if e.Error.Code == "upstream_error" || e.Error.Message == "" || strings.HasPrefix(e.Error.Code, "invalid_request") {
				t.Errorf("not the upstream's body: %s", body)
			}
			if len(f2.requests()) != 1 || resp.Header.Get("X-Relay-Attempts") != "1" {
				t.Errorf("a %s was retried", status)
			}
			if states := f2.h.Breakers().States(f2.clock.Now()); len(states) != 0 {
				t.Errorf("a caller error tripped a breaker: %+v", states)
			}
			if rec := f2.rec.next(t); rec.ErrorKind != "upstream_client_error" || rec.Status != resp.StatusCode {
				t.Errorf("record %+v", rec)
			}
		})
	}
}

func TestProxy_TrippedKeyRecoversThroughHalfOpen(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.cfg.Breakers = keypool.NewMemory(keypool.BreakerConfig{ServerFailures: 1}) // one 500 opens it
	h := f.host("solo")
	k := f.key(h, "only", "sk-up-solo-key")
	f.bind(f.model("gpt-test", true), h, wire.ShapeOpenAI, "m")
	// A second key held by a 401 for this model: panic mode never tries it.
	refused := f.key(h, "refused", "sk-up-fault-401-key")
	f.start()
	b := f.h.Breakers()
	tk, _ := b.Acquire(keypool.Ref(refused), "m", f.clock.Now())
	b.Report(tk, keypool.Result{Outcome: keypool.OutcomeAuth, Scope: keypool.ScopeModel, Reason: "401"}, f.clock.Now())

	resp, _ := f.post("/v1/chat/completions", chatBody, map[string]string{testFault: "500"})
	if resp.StatusCode != 502 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	holds := f.holdsOf(k)
	if len(holds) != 1 || holds[0].State != keypool.StateOpen || holds[0].LastReason != "500" {
		t.Fatalf("holds %+v", holds)
	}

	// Every key held: panic mode tries the open one (never the refused
	// one) and says so; its success closes the breaker.
	resp, body := f.post("/v1/chat/completions", chatBody, nil)
	if resp.StatusCode != 200 || !strings.HasSuffix(resp.Header.Get("X-Relay-Route"), "; panic=1") {
		t.Fatalf("while open: %d route=%q %s", resp.StatusCode, resp.Header.Get("X-Relay-Route"), body)
	}
	for _, r := range f.requests() {
		if r.Header.Get("Authorization") == "Bearer sk-up-fault-401-key" {
			t.Fatal("panic mode tried a key held for a 401")
		}
	}
	if holds := f.holdsOf(k); len(holds) != 0 {
		t.Fatalf("after the panic attempt: %+v", holds)
	}
	if resp, _ := f.post("/v1/chat/completions", chatBody, nil); resp.StatusCode != 200 || strings.Contains(resp.Header.Get("X-Relay-Route"), "panic") {
		t.Fatalf("after recovery: %d %s", resp.StatusCode, resp.Header.Get("X-Relay-Route"))
	}

	// Only the refused key left: no panic, 503 at once, and the log says why.
	if resp, _ := f.post("/v1/chat/completions", chatBody, map[string]string{testFault: "401"}); resp.StatusCode != 502 {
		t.Fatalf("401: %d", resp.StatusCode)
	}
	resp, body = f.post("/v1/chat/completions", chatBody, nil)
	if e := decodeError(t, body); resp.StatusCode != 503 || e.Error.Code != "no_usable_host_key" {
		t.Fatalf("every key held for a 401: %d %s", resp.StatusCode, body)
	}
	if !strings.Contains(f.logs.String(), "held by breaker") {
		t.Errorf("the log does not say why the key was skipped:\n%s", f.logs.String())
	}
}
