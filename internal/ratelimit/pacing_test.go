package ratelimit

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// tokenCatalog is a catalog whose policy allows 1000 total tokens a
// minute and lets requests wait maxWait.
func tokenCatalog(seed byte, maxWait time.Duration) (*catalog, *snapshot.RateLimit) {
	c := newSeededCatalog("http://unused", seed)
	rl := c.limit("tpm", snapshot.Rule{Meter: snapshot.MeterTotalTokens, Amount: 1000, Window: time.Minute})
	c.policy.RateLimitID = rl.ID
	c.policy.MaxWait = maxWait
	return c, rl
}

// TestLimiter_TokenWaiterWokenBySettlement: a request whose token estimate
// does not fit waits, and is admitted as soon as a request in flight
// settles below its estimate — in the same pod, and on another pod through
// Redis — long before the window moves. The polls are turned off (an
// hour), so only the settlement's wake-up can admit it.
func TestLimiter_TokenWaiterWokenBySettlement(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		pods func(t *testing.T) (holder, waiter *Limiter)
	}{
		{"memory one pod", func(t *testing.T) (*Limiter, *Limiter) {
			l := New(Options{TokenPoll: time.Hour})
			t.Cleanup(func() { _ = l.Close() })
			return l, l
		}},
		{"redis one pod", func(t *testing.T) (*Limiter, *Limiter) {
			ls := openRedis(t, redistest.URL(t), 1, Options{TokenPoll: time.Hour})
			return ls[0], ls[0]
		}},
		{"redis two pods", func(t *testing.T) (*Limiter, *Limiter) {
			ls := openRedis(t, redistest.URL(t), 2, Options{TokenPoll: time.Hour})
			return ls[0], ls[1]
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			holder, waiter := tc.pods(t)
			if waiter != holder {
				// The waiter's subscription must be live before the
				// settlement is published.
				eventually(t, "the waiter's pod subscribed", func() bool {
					n, err := holder.opts.Redis.PubSubNumSub(t.Context(), holder.redis.Channel()).Result()
					return err == nil && n[holder.redis.Channel()] >= 2
				})
			}
			const rounds = 20
			var delays []time.Duration
			for i := range rounds {
				c, _ := tokenCatalog(byte(i+1), 10*time.Second)
				snap := c.build()
				// 400 bytes → 100 input tokens; with max_tokens 900 the
				// holder takes the whole 1000.
				held, err := attempt(t.Context(), holder, c.admission(t, snap, 400, 900), c.hostKey, c.binding)
				if err != nil {
					t.Fatal(err)
				}
				before := waiter.Stats().Waiting
				admitted := make(chan time.Time, 1)
				go func() {
					if _, err := attempt(t.Context(), waiter, c.admission(t, snap, 400, 400), c.hostKey, c.binding); err != nil {
						t.Error(err)
					}
					admitted <- time.Now()
				}()
				eventually(t, "the second request waits", func() bool { return waiter.Stats().Waiting == before+1 })
				settled := time.Now()
				held.Done(wire.Usage{Input: 100, Output: 50}) // 850 tokens back
				select {
				case at := <-admitted:
					delays = append(delays, at.Sub(settled))
				case <-time.After(5 * time.Second):
					t.Fatal("the waiter was not admitted after the settlement gave tokens back")
				}
			}
			slices.Sort(delays)
			t.Logf("%s: settlement → admission over %d rounds: p50 %v, p99 %v, max %v", tc.name, rounds,
				delays[rounds/2], delays[rounds*99/100], delays[rounds-1])
			if st := waiter.Stats(); st.Refused != 0 {
				t.Fatalf("refused %d, want 0", st.Refused)
			}
		})
	}
}

// TestLimiter_TokenRefusals: a request larger than the token rule is
// refused at once, naming the rule; one that waits in vain is refused at
// its deadline with the time it would actually fit as Retry-After.
func TestLimiter_TokenRefusals(t *testing.T) {
	t.Parallel()
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			l := be.open(t, 1, Options{TokenPoll: 20 * time.Millisecond})[0]

			// Larger than the rule: refused without waiting.
			c, _ := tokenCatalog(1, 10*time.Second)
			snap := c.build()
			start := time.Now()
			_, err := attempt(t.Context(), l, c.admission(t, snap, 400, 5000), c.hostKey, c.binding)
			var we *wire.Error
			if !errors.As(err, &we) || we.Kind != wire.ErrRateLimited || we.RetryAfter != 0 || time.Since(start) > time.Second {
				t.Fatalf("never fits: %v after %v, want an immediate rate_limited without Retry-After", err, time.Since(start))
			}
			if want := `The rate limit "tpm" allows 1000 tokens per minute; this request needs about 5100`; !strings.Contains(we.Msg, want) {
				t.Fatalf("message %q, want it to name the rule (%q)", we.Msg, want)
			}

			// Waits in vain: the window is full of settled tokens (a
			// 2 s window, so the fit is near), the wait is 300 ms.
			c = newSeededCatalog("http://unused", 2)
			c.policy.RateLimitID = c.limit("tp2s", snapshot.Rule{Meter: snapshot.MeterTotalTokens, Amount: 1000, Window: 2 * time.Second}).ID
			c.policy.MaxWait = 300 * time.Millisecond
			snap = c.build()
			r, err := attempt(t.Context(), l, c.admission(t, snap, 400, 900), c.hostKey, c.binding)
			if err != nil {
				t.Fatal(err)
			}
			filled := time.Now()
			r.Done(wire.Usage{Input: 100, Output: 900})
			flush(t, l)
			_, err = attempt(t.Context(), l, c.admission(t, snap, 400, 400), c.hostKey, c.binding)
			refused := time.Now()
			if !errors.As(err, &we) || we.Kind != wire.ErrRateLimited {
				t.Fatalf("got %v, want rate_limited", err)
			}
			if waited := refused.Sub(filled); waited < 250*time.Millisecond {
				t.Fatalf("refused after %v, want it to wait its 300ms first", waited)
			}
			fits := filled.Add(2 * time.Second) // when the 1000 tokens expire
			if got, want := refused.Add(we.RetryAfter), fits; got.Sub(want).Abs() > 100*time.Millisecond {
				t.Fatalf("Retry-After %v points %v from when it fits", we.RetryAfter, got.Sub(want))
			}
			var rf *Refusal
			h := http.Header{}
			if !errors.As(err, &rf) {
				t.Fatalf("%T is not a *Refusal", err)
			}
			rf.SetHeaders(h)
			if ms, _ := strconv.ParseInt(h.Get("Retry-After-Ms"), 10, 64); time.Duration(ms)*time.Millisecond != we.RetryAfter.Truncate(time.Millisecond) {
				t.Fatalf("retry-after-ms %q, want %d", h.Get("Retry-After-Ms"), we.RetryAfter.Milliseconds())
			}
		})
	}
}
