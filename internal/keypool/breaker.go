package keypool

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/relay-llm/relay/internal/backoff"
	"github.com/relay-llm/relay/internal/snapshot"
)

// KeyRef names a host key at one secret version. A rotated secret is a new
// KeyRef, so its breakers start closed.
type KeyRef struct {
	ID      snapshot.ID
	Version int
}

// Ref returns the KeyRef of a host key.
func Ref(k *snapshot.HostKey) KeyRef { return KeyRef{ID: k.ID, Version: k.SecretVersion} }

// Hold names one breaker: a host key for every model (Model == "") or a
// host key for one upstream model (the binding's upstream model name).
type Hold struct {
	Ref   KeyRef
	Model string
}

// Scope is what a failure holds.
type Scope uint8

// Scopes.
const (
	// ScopeKey holds the host key for every model.
	ScopeKey Scope = iota
	// ScopeModel holds the host key for the attempt's upstream model only.
	ScopeModel
)

// String names the scope for the control API and the log.
func (s Scope) String() string {
	if s == ScopeModel {
		return "model"
	}
	return "key"
}

// Outcome is what one upstream attempt says, for the breakers.
type Outcome uint8

// Outcomes.
const (
	// OutcomeSuccess: the upstream answered (2xx, or a 4xx that is the caller's fault).
	OutcomeSuccess Outcome = iota + 1
	// OutcomeNeutral: no verdict, e.g. the caller went away first.
	OutcomeNeutral
	// OutcomeFailure: 5xx, network error or timeout. Opens the breaker of
	// Result.Scope with backoff.
	OutcomeFailure
	// OutcomeRateLimited: 429. Cools the breaker of Result.Scope down for Result.RetryAfter.
	OutcomeRateLimited
	// OutcomeAuth: 401 or 403. Holds Result.Scope: a 401/403 holds (key,
	// upstream model) first, since providers refuse one model or
	// deployment with a key that is good for the others; a second model
	// refused on the same key within BreakerConfig.AuthWindow shows the key
	// itself bad and holds it for every model. Re-probed with the hold
	// backoff (capped at BreakerConfig.MaxHoldBackoff).
	OutcomeAuth
	// OutcomeQuota: 402, insufficient_quota, a credit balance too low.
	// Holds the key like OutcomeAuth.
	OutcomeQuota
)

// Evidence says how much one OutcomeFailure shows. A definite failure
// (the zero value: a model not found, an answer Relay cannot read) opens
// its breaker at once; a server error or a network failure is one event,
// and opens the breaker only when it is the BreakerConfig's threshold-th in
// a row with no success between (Envoy's outlier detection counts
// consecutive 5xx and local-origin failures the same way).
type Evidence uint8

// Evidence of a failure.
const (
	// EvidenceDefinite opens the breaker at once.
	EvidenceDefinite Evidence = iota
	// EvidenceServer: a 5xx, 529 or 408 before the answer began.
	EvidenceServer
	// EvidenceNetwork: a connect failure, a reset or timeout before the
	// answer, or a break after it began.
	EvidenceNetwork
)

// Result is reported for every attempt that acquired a key.
type Result struct {
	Outcome    Outcome
	Scope      Scope         // what a failure holds; Classify sets it
	Evidence   Evidence      // for OutcomeFailure: how many in a row open the breaker; Classify sets it
	RetryAfter time.Duration // for OutcomeRateLimited; 0 when the upstream gave none
	Reason     string        // short and secret-free: "500", "timeout", "429 insufficient_quota"
}

// Ticket is a claim on a key for one attempt at one upstream model. Probe
// is set when the claim took the key's half-open probe slot, ModelProbe
// when it took the (key, model) breaker's.
type Ticket struct {
	Ref        KeyRef
	Model      string
	Probe      bool
	ModelProbe bool
	// Thresholds are the key's host's own; the proxy sets them from the
	// snapshot, and Report counts the attempt's failure against them.
	Thresholds Thresholds
}

// Thresholds are how many server errors (ServerFailures) and network
// failures (NetworkFailures) in a row open a breaker for one host's keys.
// A zero field takes the BreakerConfig's.
type Thresholds struct {
	ServerFailures  int
	NetworkFailures int
}

// State of one breaker.
type State string

// Breaker states.
const (
	StateClosed         State = "closed"
	StateOpen           State = "open"            // failing: waiting out its backoff
	StateHalfOpen       State = "half_open"       // backoff over: one probe request may go
	StateCooling        State = "cooling"         // rate limited: waiting out Retry-After
	StateAuthFailed     State = "auth_failed"     // 401/403: waiting out the hold backoff
	StateQuotaExhausted State = "quota_exhausted" // 402/insufficient_quota: waiting out the hold backoff
)

// KeyState describes one breaker that is not plainly closed, for the
// control API and the metrics.
type KeyState struct {
	Ref        KeyRef    `json:"-"`
	HostKeyID  string    `json:"host_key_id"`
	Version    int       `json:"secret_version"`
	Scope      Scope     `json:"-"`
	Model      string    `json:"model,omitempty"` // the upstream model of a model-scoped hold
	State      State     `json:"state"`
	Failures   int       `json:"consecutive_failures"`
	Until      time.Time `json:"until,omitzero"` // when the hold lets a probe (or, cooling, everyone) through
	Probing    bool      `json:"probing"`
	LastReason string    `json:"last_reason"`
	LastAt     time.Time `json:"last_at"`
}

// Breakers holds the circuit breakers of every host key and (host key,
// upstream model). Implementations must be safe for concurrent use and
// must not block on the request path for longer than one round trip to
// their store.
type Breakers interface {
	// Ready reports, without claiming anything, whether the key could be
	// tried now for the upstream model ("" asks about the key alone).
	Ready(ref KeyRef, model string, now time.Time) bool
	// Acquire claims the key for one attempt at the upstream model. A
	// half-open breaker lets one attempt through at a time, as its probe.
	Acquire(ref KeyRef, model string, now time.Time) (Ticket, bool)
	// Report records how an acquired attempt went; every Acquire that
	// succeeded must be reported once.
	Report(t Ticket, r Result, now time.Time)
	// Panicable reports whether panic mode may try the key for the
	// upstream model although its breakers hold it: only when what holds
	// it is an open breaker (server errors, network failures), never a
	// 429's cool-down, a 401/403 or an exhausted quota, which ask Relay to
	// wait. last is when those breakers last saw a failure: panic mode
	// tries the least recently failed key first.
	Panicable(ref KeyRef, model string, now time.Time) (last time.Time, ok bool)
	// States lists every breaker that is not closed.
	States(now time.Time) []KeyState
	// Clear closes the breakers of the host key id, at every secret
	// version: all of them when model is "", else that upstream model's
	// only. It returns what it closed. Shared implementations close them
	// on every pod.
	Clear(ctx context.Context, id snapshot.ID, model string, now time.Time) ([]KeyState, error)
}

// BreakerConfig tunes the in-process breakers. Zero fields take defaults.
type BreakerConfig struct {
	BaseBackoff       time.Duration // first open period (1s); doubles per consecutive failure
	MaxBackoff        time.Duration // cap of the open period (60s)
	HoldBackoff       time.Duration // first hold of an invalid or exhausted key (30s); doubles per failed probe
	MaxHoldBackoff    time.Duration // cap of that hold (10m)
	ShortRetryAfter   time.Duration // 429s asking to wait no longer than this (1s) do not cool the breaker
	DefaultRetryAfter time.Duration // cool-down of a 429 that gave no Retry-After (5s)
	ProbeTimeout      time.Duration // a probe never reported frees its slot after this (2m)
	// ServerFailures is how many server errors (5xx, 529, 408) in a row
	// open a breaker (5); NetworkFailures the same for network failures
	// (5). Definite failures open it at once. 1 opens on every failure.
	// A host may set its own (Ticket.Thresholds).
	ServerFailures  int
	NetworkFailures int
	// AuthWindow: a 401/403 on a second upstream model of a key within
	// this of the first holds the key itself (1m).
	AuthWindow time.Duration
}

func (c BreakerConfig) withDefaults() BreakerConfig {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.BaseBackoff, time.Second)
	def(&c.MaxBackoff, time.Minute)
	def(&c.HoldBackoff, 30*time.Second)
	def(&c.MaxHoldBackoff, 10*time.Minute)
	def(&c.ShortRetryAfter, time.Second)
	def(&c.DefaultRetryAfter, 5*time.Second)
	def(&c.ProbeTimeout, 2*time.Minute)
	def(&c.AuthWindow, time.Minute)
	if c.ServerFailures <= 0 {
		c.ServerFailures = 5
	}
	if c.NetworkFailures <= 0 {
		c.NetworkFailures = 5
	}
	return c
}

// threshold is how many failures of evidence ev in a row open a breaker:
// the host's own (th) where it sets one, else c's.
func (c BreakerConfig) threshold(ev Evidence, th Thresholds) int {
	switch ev {
	case EvidenceServer:
		if th.ServerFailures > 0 {
			return th.ServerFailures
		}
		return c.ServerFailures
	case EvidenceNetwork:
		if th.NetworkFailures > 0 {
			return th.NetworkFailures
		}
		return c.NetworkFailures
	}
	return 1
}

// Backoff is the open period after n consecutive failures.
func (c BreakerConfig) Backoff(n int) time.Duration {
	c = c.withDefaults()
	return backoff.Policy{Base: c.BaseBackoff, Max: c.MaxBackoff}.Delay(n)
}

// HoldFor is how long an invalid or exhausted key is held after n
// consecutive key-level refusals before the next probe.
func (c BreakerConfig) HoldFor(n int) time.Duration {
	c = c.withDefaults()
	return backoff.Policy{Base: c.HoldBackoff, Max: c.MaxHoldBackoff}.Delay(n)
}

type entryKind uint8

const (
	kindOpen entryKind = iota + 1
	kindCooling
	kindAuth
	kindQuota
	// kindCounting is a closed breaker counting failures in a row below
	// its threshold: it holds nothing, and a success forgets it.
	kindCounting
)

// held reports whether the kind is a key-level hold with the long backoff.
func (k entryKind) held() bool { return k == kindAuth || k == kindQuota }

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
	m  map[Hold]*entry // closed breakers have no entry
}

var _ Breakers = (*Memory)(nil)

// NewMemory returns in-process breakers.
func NewMemory(cfg BreakerConfig) *Memory {
	return &Memory{cfg: cfg.withDefaults(), m: make(map[Hold]*entry)}
}

// state says where e stands at now, and whether an attempt may go.
func (b *Memory) state(e *entry, now time.Time) (State, bool) {
	if e == nil {
		return StateClosed, true
	}
	if now.Before(e.until) {
		switch e.kind {
		case kindCooling:
			return StateCooling, false
		case kindAuth:
			return StateAuthFailed, false
		case kindQuota:
			return StateQuotaExhausted, false
		}
		return StateOpen, false
	}
	if e.kind == kindCooling || e.kind == kindCounting {
		return StateClosed, true
	}
	if e.probing && now.Sub(e.probeAt) < b.cfg.ProbeTimeout {
		return StateHalfOpen, false
	}
	return StateHalfOpen, true
}

// lookup returns the key's and the (key, model) breaker; the caller holds mu.
func (b *Memory) lookup(ref KeyRef, model string) (key, mod *entry) {
	key = b.m[Hold{Ref: ref}]
	if model != "" {
		mod = b.m[Hold{Ref: ref, Model: model}]
	}
	return key, mod
}

// Ready implements Breakers.
func (b *Memory) Ready(ref KeyRef, model string, now time.Time) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if len(b.m) == 0 {
		return true
	}
	key, mod := b.lookup(ref, model)
	_, okKey := b.state(key, now)
	_, okMod := b.state(mod, now)
	return okKey && okMod
}

// Panicable implements Breakers.
func (b *Memory) Panicable(ref KeyRef, model string, now time.Time) (time.Time, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var last time.Time
	key, mod := b.lookup(ref, model)
	for _, e := range [2]*entry{key, mod} {
		if e == nil {
			continue
		}
		if st, _ := b.state(e, now); st != StateOpen && st != StateHalfOpen && st != StateClosed {
			return time.Time{}, false // cooling, or held for auth or quota
		}
		if e.kind.held() {
			return time.Time{}, false // a half-open auth or quota hold: its probe decides
		}
		if e.lastAt.After(last) {
			last = e.lastAt
		}
	}
	return last, true
}

// Acquire implements Breakers.
func (b *Memory) Acquire(ref KeyRef, model string, now time.Time) (Ticket, bool) {
	t := Ticket{Ref: ref, Model: model}
	b.mu.RLock()
	key, mod := b.lookup(ref, model)
	b.mu.RUnlock()
	if key == nil && mod == nil {
		return t, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	key, mod = b.lookup(ref, model)
	stKey, okKey := b.state(key, now)
	stMod, okMod := b.state(mod, now)
	if !okKey || !okMod {
		return t, false
	}
	t.Probe = b.claim(Hold{Ref: ref}, key, stKey, now)
	t.ModelProbe = b.claim(Hold{Ref: ref, Model: model}, mod, stMod, now)
	return t, true
}

// claim takes e's probe slot when it is half-open, and forgets a
// cool-down that ran out.
func (b *Memory) claim(h Hold, e *entry, st State, now time.Time) bool {
	switch {
	case e == nil:
	case st == StateClosed && e.kind == kindCooling:
		delete(b.m, h)
	case st == StateHalfOpen:
		e.probing, e.probeAt = true, now
		return true
	}
	return false
}

// Report implements Breakers.
func (b *Memory) Report(t Ticket, r Result, now time.Time) {
	keyH, modH := Hold{Ref: t.Ref}, Hold{Ref: t.Ref, Model: t.Model}
	if r.Outcome == OutcomeSuccess || r.Outcome == OutcomeNeutral {
		b.mu.RLock()
		key, mod := b.lookup(t.Ref, t.Model)
		b.mu.RUnlock()
		if key == nil && mod == nil {
			return // the common case: closed breakers stay closed
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case r.Outcome == OutcomeSuccess:
		b.pass(keyH, t.Probe)
		b.pass(modH, t.ModelProbe)
	case r.Outcome == OutcomeNeutral:
		b.release(keyH, t.Probe)
		b.release(modH, t.ModelProbe)
	case r.Scope == ScopeModel && t.Model != "":
		// Says nothing about the key: its probe slot is only freed.
		b.fail(modH, t.ModelProbe, t.Thresholds, r, now)
		b.release(keyH, t.Probe)
		if r.Outcome == OutcomeAuth && b.refusedElsewhere(t.Ref, t.Model, now) {
			// A second model refused within the window: the key is bad.
			r.Reason += " on two models"
			b.fail(keyH, t.Probe, t.Thresholds, r, now)
		}
	default:
		b.fail(keyH, t.Probe, t.Thresholds, r, now)
		b.release(modH, t.ModelProbe)
	}
}

// pass closes h when its probe went well, and forgets the failures a
// closed breaker was counting.
func (b *Memory) pass(h Hold, probe bool) {
	if e := b.m[h]; e != nil && (e.kind == kindCounting || probe && e.kind != kindCooling) {
		delete(b.m, h)
	}
}

// refusedElsewhere reports whether another upstream model of ref than
// model is held for a 401/403 that came within the auth window; the caller
// holds mu.
func (b *Memory) refusedElsewhere(ref KeyRef, model string, now time.Time) bool {
	for h, e := range b.m {
		if h.Ref == ref && h.Model != "" && h.Model != model && e.kind == kindAuth && now.Sub(e.lastAt) <= b.cfg.AuthWindow {
			return true
		}
	}
	return false
}

// release frees h's probe slot without a verdict.
func (b *Memory) release(h Hold, probe bool) {
	if e := b.m[h]; e != nil && probe {
		e.probing = false
	}
}

// fail records a failure on h, counted against th (the host's
// thresholds). A failure of an attempt that started before the breaker
// opened (not its probe) says nothing new: it does not lengthen the
// backoff.
func (b *Memory) fail(h Hold, probe bool, th Thresholds, r Result, now time.Time) {
	e := b.m[h]
	open := func(kind entryKind, failures int, d time.Duration) {
		b.m[h] = &entry{kind: kind, failures: failures, until: now.Add(d), reason: r.Reason, lastAt: now}
	}
	switch r.Outcome {
	case OutcomeFailure:
		switch {
		case e == nil || e.kind == kindCooling || e.kind == kindCounting:
			n := 1
			if e != nil && e.kind == kindCounting {
				n = e.failures + 1
			}
			switch {
			case n >= b.cfg.threshold(r.Evidence, th):
				open(kindOpen, 1, b.cfg.Backoff(1))
			case e != nil && e.kind == kindCooling && now.Before(e.until):
				// Still cooling down: that holds it already.
			default:
				b.m[h] = &entry{kind: kindCounting, failures: n, reason: r.Reason, lastAt: now}
			}
		case probe && e.kind.held():
			open(e.kind, e.failures+1, b.cfg.HoldFor(e.failures+1))
		case probe:
			open(kindOpen, e.failures+1, b.cfg.Backoff(e.failures+1))
		}
	case OutcomeRateLimited:
		ra := r.RetryAfter
		if ra <= 0 {
			ra = b.cfg.DefaultRetryAfter
		}
		if ra <= b.cfg.ShortRetryAfter {
			b.release(h, probe)
			return
		}
		until := now.Add(ra)
		switch {
		case e == nil || probe || e.kind == kindCounting:
			b.m[h] = &entry{kind: kindCooling, until: until, reason: r.Reason, lastAt: now}
		case e.kind == kindCooling:
			if until.After(e.until) {
				e.until = until
			}
			e.reason, e.lastAt = r.Reason, now
		}
	case OutcomeAuth, OutcomeQuota:
		kind := kindAuth
		if r.Outcome == OutcomeQuota {
			kind = kindQuota
		}
		switch {
		case e == nil || e.kind != kind:
			open(kind, 1, b.cfg.HoldFor(1))
		case probe:
			open(kind, e.failures+1, b.cfg.HoldFor(e.failures+1))
		}
	}
}

// States implements Breakers.
func (b *Memory) States(now time.Time) []KeyState {
	b.mu.RLock()
	out := make([]KeyState, 0, len(b.m))
	for h, e := range b.m {
		if ks, ok := b.describe(h, e, now); ok {
			out = append(out, ks)
		}
	}
	b.mu.RUnlock()
	sortStates(out)
	return out
}

// describe is e as the control API shows it; false for a closed breaker.
func (b *Memory) describe(h Hold, e *entry, now time.Time) (KeyState, bool) {
	st, _ := b.state(e, now)
	if st == StateClosed {
		return KeyState{}, false
	}
	ks := KeyState{
		Ref: h.Ref, HostKeyID: h.Ref.ID.String(), Version: h.Ref.Version, Model: h.Model,
		State: st, Failures: e.failures, Until: e.until, Probing: e.probing && st == StateHalfOpen,
		LastReason: e.reason, LastAt: e.lastAt,
	}
	if h.Model != "" {
		ks.Scope = ScopeModel
	}
	return ks, true
}

// Clear implements Breakers.
func (b *Memory) Clear(_ context.Context, id snapshot.ID, model string, now time.Time) ([]KeyState, error) {
	return b.clear(id, model, now), nil
}

func (b *Memory) clear(id snapshot.ID, model string, now time.Time) []KeyState {
	b.mu.Lock()
	var out []KeyState
	for h, e := range b.m {
		if !clears(h, id, model) {
			continue
		}
		if ks, ok := b.describe(h, e, now); ok {
			out = append(out, ks)
		}
		delete(b.m, h)
	}
	b.mu.Unlock()
	sortStates(out)
	return out
}

// clears reports whether a clear of (id, model) closes h.
func clears(h Hold, id snapshot.ID, model string) bool {
	return h.Ref.ID == id && (model == "" || h.Model == model)
}

// sortStates orders states by host key, secret version, then the key's own
// breaker before its models'.
func sortStates(s []KeyState) {
	slices.SortFunc(s, func(a, b KeyState) int {
		if c := bytes.Compare(a.Ref.ID[:], b.Ref.ID[:]); c != 0 {
			return c
		}
		if a.Ref.Version != b.Ref.Version {
			return a.Ref.Version - b.Ref.Version
		}
		return strings.Compare(a.Model, b.Model)
	})
}
