package proxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/cache"
	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// countingStore is a cache.Store that counts its calls around a Memory.
type countingStore struct {
	calls atomic.Int64
	mem   *cache.Memory
}

func (s *countingStore) Get(ctx context.Context, k string) ([]byte, error) {
	s.calls.Add(1)
	return s.mem.Get(ctx, k)
}

func (s *countingStore) Set(ctx context.Context, k string, v []byte, ttl time.Duration) error {
	s.calls.Add(1)
	return s.mem.Set(ctx, k, v, ttl)
}

func (s *countingStore) Purge(ctx context.Context, p string) (int, error) {
	s.calls.Add(1)
	return s.mem.Purge(ctx, p)
}

const cacheBenchBody = `{"model":"model-ca","temperature":0,"messages":[{"role":"user","content":"hello relay, please answer"}]}`

// cacheBench is the hot path's handler with a response cache on a
// counting store, and a request authenticated and routed once.
func cacheBench(t testing.TB, conf *snapshot.ResponseCache) (*Handler, *snapshot.Snapshot, *request, *countingStore) {
	h, snap := hotPathHandler(snapshot.StrategyPrioritized)
	store := &countingStore{mem: cache.NewMemory(0, nil)}
	h.cache = cache.New(cache.Config{Store: store})
	rq := hotPathRequest(h)
	rq.w = httptest.NewRecorder()
	caller, res := snap.Authenticate(hashKey(benchKey), h.now())
	if res != snapshot.AuthOK {
		t.Fatal(res)
	}
	caller.Policy.Cache = conf
	rq.caller, rq.snap = caller, snap
	rq.body.WriteString(cacheBenchBody)
	if err := h.router.Route(snap, caller.Policy, "model-ca", wire.InboundChat, h.now(), &rq.plan); err != nil {
		t.Fatal(err)
	}
	return h, snap, rq, store
}

// TestCacheOff_AddsNoAllocationAndNoStoreCall: with the cache off for the
// request's policy, the hot path with the cache's hook and header costs
// no allocation and no call to the store.
func TestCacheOff_AddsNoAllocationAndNoStoreCall(t *testing.T) {
	h, snap, rq, store := cacheBench(t, nil)
	tried := make([]snapshot.ID, 0, maxTried)
	hd := http.Header{}
	step := func() {
		hotPath(h, snap, rq, tried)
		if rq.serveCached() {
			t.Fatal("served from a cache that is off")
		}
		rq.hvals = rq.hvals[:0]
		rq.setHeader(hd, cacheHeader, rq.cacheState())
	}
	step()
	if allocs := testing.AllocsPerRun(200, step); allocs != 0 {
		t.Errorf("%v allocations per request with the cache off", allocs)
	}
	if n := store.calls.Load(); n != 0 {
		t.Errorf("%d store calls with the cache off", n)
	}
	if got := hd.Get(cacheHeader); got != "off" {
		t.Errorf("%s = %q, want off", cacheHeader, got)
	}
}

// BenchmarkCache measures what the response cache adds to the hot path:
// off (one nil check), a miss (decode, key, one store lookup) and a hit
// (the same, plus decoding the entry and replaying it in the caller's
// shape), on the in-process store.
func BenchmarkCache(b *testing.B) {
	conf := &snapshot.ResponseCache{TTL: time.Hour}
	run := func(b *testing.B, conf *snapshot.ResponseCache, fill bool) {
		h, snap, rq, _ := cacheBench(b, conf)
		tried := make([]snapshot.ID, 0, maxTried)
		body := rq.body.String()
		if fill {
			rq.serveCached()
			r := &canonical.Response{ID: "chatcmpl-1", Model: "up", Created: 1, Finish: canonical.FinishStop,
				Parts: []canonical.Part{{Type: canonical.PartText, Text: strings.Repeat("cached answer ", 20)}}, Usage: canonical.Usage{Input: 12, Output: 40}}
			if !h.cache.Fill(context.Background(), rq.rc.key, &cache.Entry{Response: *r}, time.Hour, 0) {
				b.Fatal("fill")
			}
		}
		b.ReportAllocs()
		for b.Loop() {
			hotPath(h, snap, rq, tried)
			rq.xin, rq.xinErr, rq.rc, rq.cache = nil, nil, nil, ""
			rq.body.Reset()
			rq.body.WriteString(body)
			rq.w = httptest.NewRecorder()
			rq.hvals = rq.hvals[:0]
			hit := rq.serveCached()
			if hit != fill {
				b.Fatalf("hit %v, want %v", hit, fill)
			}
		}
	}
	b.Run("off", func(b *testing.B) { run(b, nil, false) })
	b.Run("miss", func(b *testing.B) { run(b, conf, false) })
	b.Run("hit", func(b *testing.B) { run(b, conf, true) })
}
