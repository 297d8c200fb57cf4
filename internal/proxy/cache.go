package proxy

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/relay-llm/relay/internal/cache"
	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/pricing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/translator"
	"github.com/relay-llm/relay/internal/wire"
)

// The response cache (package cache; docs/caching.md) on the request path:
// after routing, a request whose policy caches its model is looked up (one
// store round trip); a hit is answered in the caller's shape — streamed
// when the caller streams — without an upstream call, a miss goes upstream
// as usual and its answer is collected on the way by (*cacheFill) and kept
// once the response has ended, off the request path. With the cache off
// for the request none of this runs: one nil check.

// Cache headers.
const (
	// cacheHeader says, on every answer, what the cache did: hit, miss,
	// bypass or off. A caller sends it as bypass (neither read nor fill)
	// or refresh (go upstream and replace the entry).
	cacheHeader = "X-Relay-Cache"
	// cacheAgeHeader is a hit's entry age in whole seconds.
	cacheAgeHeader = "X-Relay-Cache-Age"
)

// Cache states, as the cache header says them.
const (
	cacheOff    = "off"
	cacheHit    = "hit"
	cacheMiss   = "miss"
	cacheBypass = "bypass"
)

// cacheFill is a miss's answer on its way to the cache.
type cacheFill struct {
	key  string
	conf *snapshot.ResponseCache
	col  *translator.Collector
	body []byte // a whole upstream body, as it is read
	size int    // the bytes seen, against conf.MaxEntryBytes
	over bool   // the answer grew past what is kept
	// answer is set once the upstream answer was read whole.
	answer  *canonical.Response
	binding snapshot.ID
	// sem is the request's place in the semantic cache; nil: none.
	sem *semFill
}

// cacheState is what the cache header says for the request.
func (rq *request) cacheState() string {
	if rq.cache == "" {
		return cacheOff
	}
	return rq.cache
}

// serveCached looks the request up when its policy caches its model, and
// answers a hit. It reports whether the request was answered.
func (rq *request) serveCached() bool {
	p := rq.caller.Policy
	if rq.h.cache == nil || p == nil || p.Cache == nil {
		return false
	}
	if g := p.Guardrails; g != nil && !g.CacheSafe() {
		return false // an entry would skip the checks of the answer
	}
	return rq.lookupCache(p.Cache)
}

func (rq *request) lookupCache(conf *snapshot.ResponseCache) bool {
	m := rq.plan.Model
	if m == nil || !conf.Caches(m.ID) {
		return false
	}
	switch rq.in {
	case wire.InboundChat, wire.InboundMessages, wire.InboundResponses, wire.InboundGenerate, wire.InboundGemini:
	default:
		return false // embeddings and token counts are not answers the cache keeps
	}
	read, fill := cacheControl(rq.r.Header)
	if !read && !fill {
		rq.cache = cacheBypass
		rq.h.cache.Bypass()
		return false
	}
	if rq.decodeCaller() != nil {
		return false // the request path reports it
	}
	c := &rq.xin.C
	if st := c.State; st != nil && (st.PreviousResponseID != "" || st.Conversation != "") || rq.st != nil && rq.st.conv != "" {
		return false // the answer depends on state upstream, or goes into a conversation
	}
	if !conf.Nondeterministic && !cache.Deterministic(c) {
		return false
	}
	s := cache.Scope{Policy: rq.caller.Policy.ID, Project: rq.caller.ProjectID, Kind: conf.Scope}
	switch conf.Scope {
	case snapshot.CacheScopeRelayKey:
		s.Value = rq.caller.CredentialID.String()
	case snapshot.CacheScopeHeader:
		s.Value = rq.r.Header.Get(conf.ScopeHeader)
	}
	key, err := cache.Key(s, m.ID, c)
	if err != nil {
		return false
	}
	rq.cache = cacheMiss
	rq.rc = &cacheFill{key: key, conf: conf}
	if !read {
		rq.h.cache.Miss()
		rq.rc.sem = rq.prepareSemantic(conf, s, m, c, false)
		return false
	}
	if e, ok := rq.h.cache.Lookup(rq.r.Context(), key); ok {
		return rq.serveHit(e, nil)
	}
	if rq.rc.sem = rq.prepareSemantic(conf, s, m, c, true); rq.rc.sem != nil {
		return rq.lookupSemantic(rq.rc.sem)
	}
	return false
}

// cacheControl reads the caller's say: Cache-Control no-store or
// X-Relay-Cache: bypass neither read nor fill; no-cache or refresh fill
// without reading.
func cacheControl(h http.Header) (read, fill bool) {
	read, fill = true, true
	switch strings.ToLower(strings.TrimSpace(h.Get(cacheHeader))) {
	case "bypass":
		return false, false
	case "refresh":
		read = false
	}
	for _, v := range h.Values("Cache-Control") {
		for d := range strings.SplitSeq(v, ",") {
			switch strings.ToLower(strings.TrimSpace(d)) {
			case "no-store":
				return false, false
			case "no-cache":
				read = false
			}
		}
	}
	return read, fill
}

// serveHit answers from entry e (found by similarity when sh is set):
// admitted by the limiter as a request that spends no tokens, replayed in
// the caller's shape, recorded with zero usage and what it saved.
func (rq *request) serveHit(e *cache.Entry, sh *semHit) bool {
	out, err := translator.Replay(rq.out[:0], rq.xin, &e.Response)
	if err != nil {
		return false
	}
	rq.out = out
	adm := rq.admission()
	adm.BodyBytes, adm.MaxTokens, adm.Cached = 0, 0, true
	done, err := rq.h.limiter.Admit(rq.r.Context(), adm)
	if err != nil {
		rq.rc = nil
		rq.limiterFailed(err)
		return true
	}
	rq.settle = done
	rq.cache, rq.rc, rq.semHit = cacheHit, nil, sh
	rq.cacheAge = rq.h.cache.Age(e)
	rq.cacheSaved = wire.Usage(e.Response.Usage)
	rq.cacheBinding = e.BindingID
	if b := rq.snap.Binding(e.BindingID); b != nil {
		rq.cacheCost = pricing.CostAt(pricing.RatesFor(&b.Pricing, rq.cacheSaved.Input), rq.cacheSaved)
		rq.h.cache.Saved(rq.cacheCost)
	}
	hd := rq.w.Header()
	rq.setHeader(hd, cacheAgeHeader, strconv.FormatInt(int64(rq.cacheAge/time.Second), 10))
	if sh != nil {
		rq.setHeader(hd, cacheSimilarityHeader, string(formatSimilarity(nil, sh.similarity)))
	}
	if !rq.stream {
		rq.respond(http.StatusOK, "application/json", rq.out)
		return true
	}
	rq.streamHeaders()
	rq.setRelayHeaders()
	rq.w.WriteHeader(http.StatusOK)
	rq.status = http.StatusOK
	rq.ttfb = time.Since(rq.start)
	if _, err := rq.w.Write(rq.out); err != nil {
		rq.canceled()
		return true
	}
	_ = http.NewResponseController(rq.w).Flush()
	return true
}

// begin starts collecting the answer of an attempt through a binding
// of shape shape.
func (f *cacheFill) begin(shape wire.Shape, b snapshot.ID, now time.Time) {
	col, err := translator.NewCollector(shape, now)
	if err != nil {
		col = nil // a shape no collector reads: nothing is kept
	}
	f.col, f.body, f.size, f.over, f.answer, f.binding = col, f.body[:0], 0, false, nil, b
}

// grow counts n more bytes of answer, and gives up past the entry limit
// (the encoded entry is checked again when it is kept).
func (f *cacheFill) grow(n int) bool {
	f.size += n
	if f.conf.MaxEntryBytes > 0 && f.size > 2*f.conf.MaxEntryBytes {
		f.over = true
	}
	return !f.over
}

// bytes collects part of a whole upstream body.
func (f *cacheFill) bytes(p []byte) {
	if f.col == nil || f.over || !f.grow(len(p)) {
		return
	}
	f.body = append(f.body, p...)
}

// wholeBody reads the collected whole body.
func (f *cacheFill) wholeBody(body []byte) {
	if f.col == nil || f.over || !f.grow(len(body)) {
		return
	}
	if r, err := f.col.Body(body); err == nil {
		f.answer = r
	}
}

// event collects one upstream stream event.
func (f *cacheFill) event(ev wire.Event) {
	if f.col == nil || f.over || !f.grow(len(ev.Raw)) {
		return
	}
	f.col.Event(ev)
}

// end closes a streamed answer.
func (f *cacheFill) end() {
	if f.over || f.col == nil || f.answer != nil {
		return
	}
	if len(f.body) > 0 {
		f.wholeBody(f.body)
		return
	}
	f.answer = f.col.End()
}

// fillCache keeps a miss's answer once the response has ended whole, on a
// goroutine of its own: the caller's response is not held for the store.
func (rq *request) fillCache() {
	f := rq.rc
	if rq.status != http.StatusOK || rq.errKind != "" || f.col == nil {
		return
	}
	if f.over {
		rq.h.cache.TooLarge()
		return
	}
	f.end()
	r := f.answer
	if r == nil {
		return
	}
	sem := f.sem
	for i := range r.Parts {
		if r.Parts[i].Type != canonical.PartToolCall {
			continue
		}
		if !f.conf.Nondeterministic {
			return // the caller is to run tools: replaying would run them again
		}
		// Kept for this request exactly, never by similarity: the call's
		// arguments answer this turn, not a neighbour's.
		sem = nil
		break
	}
	c, ttl, max := rq.h.cache, f.conf.TTL, f.conf.MaxEntryBytes
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	e := &cache.Entry{Response: *r, BindingID: f.binding, StoredAt: rq.h.now()}
	// The goroutine outlives the request, whose state goes back to the pool.
	h, key, id := rq.h, f.key, rq.id
	h.fills.Add(1)
	go func() {
		defer h.fills.Done()
		c.Fill(context.Background(), key, e, ttl, max)
		if sem != nil {
			fillSemantic(h, sem, id, e, ttl, max)
		}
	}()
}

// DefaultCacheTTL is an entry's lifetime when its policy sets none.
const DefaultCacheTTL = time.Hour

// WaitCacheFills waits until the cache fills begun so far are done: for a
// clean shutdown, and for tests.
func (h *Handler) WaitCacheFills() { h.fills.Wait() }

// CacheStats returns the response cache's counters; zero when it is off.
func (h *Handler) CacheStats() cache.Stats {
	if h.cache == nil {
		return cache.Stats{}
	}
	return h.cache.Stats()
}

// Cache is the handler's response cache (nil when off), for the control
// plane's purges.
func (h *Handler) Cache() *cache.Cache { return h.cache }
