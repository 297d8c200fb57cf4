package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/redistest"
)

// stores returns each Store implementation, fresh, for a table test: the
// same semantics must hold in memory and in Redis.
func stores(t *testing.T) map[string]func(t *testing.T) Store {
	return map[string]func(t *testing.T) Store{
		"memory": func(t *testing.T) Store { return NewMemory() },
		"redis": func(t *testing.T) Store {
			s := NewRedis(client(t, redistest.URL(t)), redistest.Prefix(t), false)
			if err := s.Load(t.Context()); err != nil {
				t.Fatal(err)
			}
			return s
		},
		"redis-cluster": func(t *testing.T) Store {
			s := NewRedis(client(t, clusterURL(t)), redistest.Prefix(t), false)
			if err := s.Load(t.Context()); err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
}

// storeEpoch is near the real clock, since Redis expires keys by its own,
// and on a minute so that window buckets start on it.
var storeEpoch = time.Now().Truncate(time.Minute).Add(2 * time.Minute)

func at(d time.Duration) time.Time { return storeEpoch.Add(d) }

func mustReserve(t *testing.T, s Store, cs []Counter, now time.Time) Verdict {
	t.Helper()
	v, err := s.Reserve(context.Background(), cs, now)
	if err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	return v
}

func wantOK(t *testing.T, v Verdict, what string) {
	t.Helper()
	if !v.OK {
		t.Fatalf("%s: refused, wait %v (counter %d)", what, v.Wait, v.Worst)
	}
}

func wantWait(t *testing.T, v Verdict, wait time.Duration, what string) {
	t.Helper()
	if v.OK || v.Wait != wait {
		t.Fatalf("%s: ok=%v wait=%v, want refused with wait %v", what, v.OK, v.Wait, wait)
	}
}

func TestStore_Semantics(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			t.Run("window", func(t *testing.T) {
				// A 10 s window (10 ms buckets): Redis expires the keys by
				// its own clock, so a window much longer than a step of
				// this test can take on a loaded machine.
				s := open(t)
				c := []Counter{{Kind: KindWindow, Key: "w", Limit: 5, Window: 10 * time.Second, Amount: 1}}
				ms := time.Millisecond
				for i := range 5 {
					wantOK(t, mustReserve(t, s, c, at(time.Duration(i)*10*ms)), "within the limit")
				}
				v := mustReserve(t, s, c, at(100*ms))
				wantWait(t, v, 9900*ms, "over the limit") // the first entry expires at +10s
				if v.Used[0] != 5 || v.Reset[0] != 9940*ms {
					t.Errorf("used %d reset %v", v.Used[0], v.Reset[0])
				}
				wantWait(t, mustReserve(t, s, c, at(9990*ms)), 10*ms, "just before")
				wantOK(t, mustReserve(t, s, c, at(10*time.Second)), "the first entry expired")
				wantWait(t, mustReserve(t, s, c, at(10*time.Second)), 10*ms, "full again")
				// Far later everything has expired.
				if p, err := s.Peek(context.Background(), c, at(time.Hour)); err != nil || p.Used[0] != 0 {
					t.Errorf("used %v after an hour (%v)", p.Used, err)
				}
				wantOK(t, mustReserve(t, s, c, at(time.Hour)), "an hour later")
			})
			t.Run("weighted window waits for enough to expire", func(t *testing.T) {
				s := open(t)
				c := func(n int64) []Counter {
					return []Counter{{Kind: KindWindow, Key: "tok", Limit: 100, Window: time.Minute, Amount: n}}
				}
				wantOK(t, mustReserve(t, s, c(40), at(0)), "40")
				wantOK(t, mustReserve(t, s, c(40), at(12*time.Second)), "80")
				wantWait(t, mustReserve(t, s, c(50), at(24*time.Second)), 36*time.Second, "130 > 100 until the first 40 expire")
				wantWait(t, mustReserve(t, s, c(90), at(24*time.Second)), 48*time.Second, "170 needs both gone")
				wantWait(t, mustReserve(t, s, c(101), at(24*time.Second)), Never, "more than the limit")
			})
			t.Run("all or nothing", func(t *testing.T) {
				s := open(t)
				cs := []Counter{
					{Kind: KindWindow, Key: "a", Limit: 10, Window: time.Minute, Amount: 3},
					{Kind: KindWindow, Key: "b", Limit: 2, Window: time.Minute, Amount: 3},
				}
				v := mustReserve(t, s, cs, at(0))
				wantWait(t, v, Never, "b can never hold 3")
				if v.Worst != 1 {
					t.Errorf("worst %d", v.Worst)
				}
				p, err := s.Peek(context.Background(), cs[:1], at(0))
				if err != nil || !p.OK || p.Used[0] != 0 {
					t.Fatalf("a was taken by a refused reservation: %+v %v", p, err)
				}
			})
			t.Run("all or nothing across owners", func(t *testing.T) {
				// Three tags: on a Redis Cluster three scripts, and what
				// the first two took is given back when the third refuses.
				s := open(t)
				cs := []Counter{
					{Kind: KindWindow, Tag: "a", Key: "a:w", Limit: 10, Window: time.Minute, Amount: 3},
					{Kind: KindLease, Tag: "a", Key: "a:c", Limit: 5, Window: time.Minute, Lease: "x"},
					{Kind: KindPeriod, Tag: "b", Key: "b:p", Limit: 100, Amount: 30, End: at(time.Hour)},
					{Kind: KindSpacing, Tag: "b", Key: "b:s", Window: 100 * time.Millisecond},
					{Kind: KindWindow, Tag: "c", Key: "c:w", Limit: 2, Window: time.Minute, Amount: 1},
				}
				wantOK(t, mustReserve(t, s, cs[4:], at(0)), "c: 1 of 2")
				wantOK(t, mustReserve(t, s, cs[4:], at(0)), "c: 2 of 2")
				v := mustReserve(t, s, cs, at(time.Second))
				wantWait(t, v, 59*time.Second, "c is full until its first bucket expires")
				if v.Worst != 4 {
					t.Errorf("worst %d, want 4", v.Worst)
				}
				p, err := s.Peek(context.Background(), cs[:3], at(time.Second))
				if err != nil || p.Used[0] != 0 || p.Used[1] != 0 || p.Used[2] != 0 {
					t.Fatalf("a refused reservation left %v taken (%v)", p.Used, err)
				}
				wantOK(t, mustReserve(t, s, cs[3:4], at(time.Second)), "the spacing slot was given back")
				wantOK(t, mustReserve(t, s, cs[:4], at(2*time.Second)), "a and b without c")
			})
			t.Run("lease", func(t *testing.T) {
				s := open(t)
				lease := func(id string) []Counter {
					return []Counter{{Kind: KindLease, Key: "c", Limit: 2, Window: 30 * time.Second, Lease: id}}
				}
				wantOK(t, mustReserve(t, s, lease("a"), at(0)), "a")
				wantOK(t, mustReserve(t, s, lease("b"), at(time.Second)), "b")
				wantWait(t, mustReserve(t, s, lease("c"), at(2*time.Second)), 28*time.Second, "c: at most until a expires")
				if err := s.Settle(context.Background(), []Adjust{{Counter: lease("a")[0]}}, at(3*time.Second)); err != nil {
					t.Fatal(err)
				}
				wantOK(t, mustReserve(t, s, lease("c"), at(3*time.Second)), "c after a's release")
				// b renewed at +20s lives to +50s; c, not renewed, dies at +33s.
				if _, err := s.Renew(context.Background(), lease("b"), "pod", 30*time.Second, at(20*time.Second)); err != nil {
					t.Fatal(err)
				}
				wantOK(t, mustReserve(t, s, lease("d"), at(34*time.Second)), "d once c expired")
				wantWait(t, mustReserve(t, s, lease("e"), at(35*time.Second)), 15*time.Second, "e: b still renewed")
			})
			t.Run("spacing", func(t *testing.T) {
				s := open(t)
				c := []Counter{{Kind: KindSpacing, Key: "k", Window: 100 * time.Millisecond}}
				wantOK(t, mustReserve(t, s, c, at(0)), "first")
				wantWait(t, mustReserve(t, s, c, at(30*time.Millisecond)), 70*time.Millisecond, "second")
				wantOK(t, mustReserve(t, s, c, at(100*time.Millisecond)), "second on time")
				wantOK(t, mustReserve(t, s, c, at(250*time.Millisecond)), "third late")
				wantWait(t, mustReserve(t, s, c, at(300*time.Millisecond)), 50*time.Millisecond, "fourth")
			})
			t.Run("period", func(t *testing.T) {
				s := open(t)
				end := at(time.Hour)
				c := func(n int64) []Counter {
					return []Counter{{Kind: KindPeriod, Key: "budget", Limit: 100, Amount: n, End: end}}
				}
				for i := range 3 {
					wantOK(t, mustReserve(t, s, c(30), at(time.Duration(i)*time.Second)), "30")
				}
				wantWait(t, mustReserve(t, s, c(30), at(3*time.Second)), time.Hour-3*time.Second, "120 > 100")
				if err := s.Settle(context.Background(), []Adjust{{Counter: c(30)[0], Delta: -20}}, at(4*time.Second)); err != nil {
					t.Fatal(err)
				}
				if p, err := s.Peek(context.Background(), c(30), at(5*time.Second)); err != nil || p.Used[0] != 70 {
					t.Errorf("used %v after a refund of 20, want 70 (%v)", p.Used, err)
				}
				wantOK(t, mustReserve(t, s, c(30), at(5*time.Second)), "after a refund of 20")
				wantWait(t, mustReserve(t, s, c(101), at(5*time.Second)), Never, "more than the budget")
			})
			t.Run("settle windows", func(t *testing.T) {
				s := open(t)
				c := func(n int64) Counter {
					return Counter{Kind: KindWindow, Key: "t", Limit: 1000, Window: time.Minute, Amount: n}
				}
				v1 := mustReserve(t, s, []Counter{c(100)}, at(0))
				v2 := mustReserve(t, s, []Counter{c(100)}, at(time.Second))
				err := s.Settle(context.Background(), []Adjust{
					{Counter: c(100), At: v1.At, Delta: -60}, // used 40
					{Counter: c(100), At: v2.At, Delta: 50},  // used 150
				}, at(2*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				p, _ := s.Peek(context.Background(), []Counter{c(0)}, at(2*time.Second))
				if p.Used[0] != 190 {
					t.Fatalf("used %d, want 190", p.Used[0])
				}
				// The first entry (40) expires at +60s, the second (150) at +61s.
				p, _ = s.Peek(context.Background(), []Counter{c(0)}, at(60*time.Second))
				if p.Used[0] != 150 {
					t.Fatalf("used %d at +60s, want 150", p.Used[0])
				}
				// A settle after the entry expired charges an excess at once.
				if err := s.Settle(context.Background(), []Adjust{{Counter: c(100), At: v1.At, Delta: 30}}, at(62*time.Second)); err != nil {
					t.Fatal(err)
				}
				p, _ = s.Peek(context.Background(), []Counter{c(0)}, at(62*time.Second))
				if p.Used[0] != 30 {
					t.Fatalf("used %d at +62s, want 30", p.Used[0])
				}
			})
		})
	}
}
