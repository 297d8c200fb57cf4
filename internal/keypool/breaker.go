package keypool

import (
	"bytes"
	"slices"
	"sync"
	"time"

	"github.com/relay-llm/relay/internal/snapshot"
)

// KeyRef names a host key at one secret version. A rotated secret is a new
// KeyRef, so its breaker starts closed.
type KeyRef struct {
	ID      snapshot.ID
	Version int
}

// Ref returns the KeyRef of a host key.
func Ref(k *snapshot.HostKey) KeyRef { return KeyRef{ID: k.ID, Version: k.SecretVersion} }

// Outcome is what one upstream attempt says about the key it used.
type Outcome uint8

// Outcomes.
const (
	// OutcomeSuccess: the upstream answered (2xx, or a 4xx that is the caller's fault).
	OutcomeSuccess Outcome = iota + 1
	// OutcomeNeutral: no verdict, e.g. the caller went away first.
	OutcomeNeutral
	// OutcomeFailure: 5xx, network error or timeout. Opens the breaker with backoff.
	OutcomeFailure
	// OutcomeRateLimited: 429. Cools the key down for Result.RetryAfter.
	OutcomeRateLimited
	// OutcomeAuth: 401 or 403. Opens the breaker until the secret changes.
	OutcomeAuth
)

// Result is reported for every attempt that acquired a key.
type Result struct {
	Outcome    Outcome
	RetryAfter time.Duration // for OutcomeRateLimited; 0 when the upstream gave none
	Reason     string        // short and secret-free: "500", "timeout", "connection reset"
}

// Ticket is a claim on a key for one attempt. Probe is set when the claim
// took a half-open breaker's single probe slot.
type Ticket struct {
	Ref   KeyRef
	Probe bool
}

// State of one breaker.
type State string

// Breaker states.
const (
	StateClosed     State = "closed"
	StateOpen       State = "open"        // failing: waiting out its backoff
	StateHalfOpen   State = "half_open"   // backoff over: one probe request may go
	StateCooling    State = "cooling"     // rate limited: waiting out Retry-After
	StateAuthFailed State = "auth_failed" // 401/403: held until the secret changes
)

// KeyState describes one breaker that is not plainly closed, for the control API.
type KeyState struct {
	Ref        KeyRef    `json:"-"`
	HostKeyID  string    `json:"host_key_id"`
	Version    int       `json:"secret_version"`
	State      State     `json:"state"`
	Failures   int       `json:"consecutive_failures"`
	Until      time.Time `json:"until,omitzero"`
	Probing    bool      `json:"probing"`
	LastReason string    `json:"last_reason"`
	LastAt     time.Time `json:"last_at"`
}

// Breakers holds the circuit breakers of every host key. Implementations
// must be safe for concurrent use and must not block on the request path
// for longer than one round trip to their store.
type Breakers interface {
	// Ready reports, without claiming anything, whether the key could be
	// tried now.
	Ready(ref KeyRef, now time.Time) bool
	// Acquire claims the key for one attempt. A half-open breaker lets one
	// attempt through at a time, as its probe.
	Acquire(ref KeyRef, now time.Time) (Ticket, bool)
	// Report records how an acquired attempt went; every Acquire that
	// succeeded must be reported once.
	Report(t Ticket, r Result, now time.Time)
	// States lists every breaker that is not closed.
	States(now time.Time) []KeyState
}

// BreakerConfig tunes the in-process breakers. Zero fields take defaults.
type BreakerConfig struct {
	BaseBackoff       time.Duration // first open period (1s); doubles per consecutive failure
	MaxBackoff        time.Duration // cap of the open period (60s)
	ShortRetryAfter   time.Duration // 429s asking to wait no longer than this (1s) do not cool the key
	DefaultRetryAfter time.Duration // cool-down of a 429 that gave no Retry-After (5s)
	ProbeTimeout      time.Duration // a probe never reported frees its slot after this (2m)
}

func (c BreakerConfig) withDefaults() BreakerConfig {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.BaseBackoff, time.Second)
	def(&c.MaxBackoff, time.Minute)
	def(&c.ShortRetryAfter, time.Second)
	def(&c.DefaultRetryAfter, 5*time.Second)
	def(&c.ProbeTimeout, 2*time.Minute)
	return c
}

// Backoff is the open period after n consecutive failures.
func (c BreakerConfig) Backoff(n int) time.Duration {
	c = c.withDefaults()
	d := c.BaseBackoff
	for i := 1; i < n && d < c.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, c.MaxBackoff)
}

type entryKind uint8

const (
	kindOpen entryKind = iota + 1
	kindCooling
	kindAuth
)

// entry is a breaker that is not plainly closed; closed breakers have none.
type entry struct {
	kind     entryKind
	failures int
	until    time.Time
	probing  bool
	probeAt  time.Time
	reason   string
	lastAt   time.Time
}

// Memory is the in-process Breakers: correct for one pod.
type Memory struct {
	cfg BreakerConfig

	mu sync.RWMutex
	m  map[KeyRef]*entry // closed breakers have no entry
}

var _ Breakers = (*Memory)(nil)

// NewMemory returns in-process breakers.
func NewMemory(cfg BreakerConfig) *Memory {
	return &Memory{cfg: cfg.withDefaults(), m: make(map[KeyRef]*entry)}
}

// state says where e stands at now, and whether an attempt may go.
func (b *Memory) state(e *entry, now time.Time) (State, bool) {
	switch e.kind {
	case kindAuth:
		return StateAuthFailed, false
	case kindCooling:
		if now.Before(e.until) {
			return StateCooling, false
		}
		return StateClosed, true
	}
	if now.Before(e.until) {
		return StateOpen, false
	}
	if e.probing && now.Sub(e.probeAt) < b.cfg.ProbeTimeout {
		return StateHalfOpen, false
	}
	return StateHalfOpen, true
}

// Ready implements Breakers.
func (b *Memory) Ready(ref KeyRef, now time.Time) bool {
	b.mu.RLock()
	e := b.m[ref]
	ok := e == nil
	if e != nil {
		_, ok = b.state(e, now)
	}
	b.mu.RUnlock()
	return ok
}

// Acquire implements Breakers.
func (b *Memory) Acquire(ref KeyRef, now time.Time) (Ticket, bool) {
	t := Ticket{Ref: ref}
	b.mu.RLock()
	e := b.m[ref]
	b.mu.RUnlock()
	if e == nil {
		return t, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	e = b.m[ref]
	if e == nil {
		return t, true
	}
	st, ok := b.state(e, now)
	switch {
	case !ok:
		return t, false
	case st == StateClosed: // a cool-down ran out
		delete(b.m, ref)
	case st == StateHalfOpen:
		e.probing, e.probeAt = true, now
		t.Probe = true
	}
	return t, true
}

// Report implements Breakers.
func (b *Memory) Report(t Ticket, r Result, now time.Time) {
	if r.Outcome == OutcomeSuccess || r.Outcome == OutcomeNeutral {
		b.mu.RLock()
		e := b.m[t.Ref]
		b.mu.RUnlock()
		if e == nil {
			return // the common case: a closed breaker stays closed
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.m[t.Ref]
	switch r.Outcome {
	case OutcomeSuccess:
		if e != nil && t.Probe && e.kind == kindOpen {
			delete(b.m, t.Ref) // the probe worked: close
		}
	case OutcomeNeutral:
		if e != nil && t.Probe {
			e.probing = false
		}
	case OutcomeFailure:
		switch {
		case e == nil:
			b.m[t.Ref] = &entry{kind: kindOpen, failures: 1, until: now.Add(b.cfg.Backoff(1)), reason: r.Reason, lastAt: now}
		case e.kind == kindOpen && t.Probe:
			e.failures++
			e.until = now.Add(b.cfg.Backoff(e.failures))
			e.probing = false
			e.reason, e.lastAt = r.Reason, now
		case e.kind == kindCooling:
			*e = entry{kind: kindOpen, failures: 1, until: now.Add(b.cfg.Backoff(1)), reason: r.Reason, lastAt: now}
		}
		// A failure of an attempt that started before the breaker opened
		// says nothing new: it does not lengthen the backoff.
	case OutcomeRateLimited:
		ra := r.RetryAfter
		if ra <= 0 {
			ra = b.cfg.DefaultRetryAfter
		}
		if ra <= b.cfg.ShortRetryAfter {
			if e != nil && t.Probe {
				e.probing = false
			}
			return
		}
		until := now.Add(ra)
		switch {
		case e == nil:
			b.m[t.Ref] = &entry{kind: kindCooling, until: until, reason: r.Reason, lastAt: now}
		case e.kind == kindCooling:
			if until.After(e.until) {
				e.until = until
			}
			e.reason, e.lastAt = r.Reason, now
		case e.kind == kindOpen && t.Probe:
			*e = entry{kind: kindCooling, until: until, reason: r.Reason, lastAt: now}
		}
	case OutcomeAuth:
		if e == nil {
			e = &entry{}
			b.m[t.Ref] = e
		}
		*e = entry{kind: kindAuth, failures: e.failures + 1, reason: r.Reason, lastAt: now}
	}
}

// States implements Breakers.
func (b *Memory) States(now time.Time) []KeyState {
	b.mu.RLock()
	out := make([]KeyState, 0, len(b.m))
	for ref, e := range b.m {
		st, _ := b.state(e, now)
		if st == StateClosed {
			continue
		}
		ks := KeyState{
			Ref: ref, HostKeyID: ref.ID.String(), Version: ref.Version,
			State: st, Failures: e.failures, Probing: e.probing && st == StateHalfOpen,
			LastReason: e.reason, LastAt: e.lastAt,
		}
		if e.kind != kindAuth {
			ks.Until = e.until
		}
		out = append(out, ks)
	}
	b.mu.RUnlock()
	slices.SortFunc(out, func(a, b KeyState) int {
		if c := bytes.Compare(a.Ref.ID[:], b.Ref.ID[:]); c != 0 {
			return c
		}
		return a.Ref.Version - b.Ref.Version
	})
	return out
}
