package profile

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// token is a bearer token and when it stops being good.
type token struct {
	value   string
	expires time.Time
}

// tokenKey names one cached token: a host key at one secret version, with
// the parameters that shape its token (tenant, client, endpoint, scope).
type tokenKey struct {
	key     string
	version int
	params  string
}

// fetchFunc mints a token; lifetime is how long the endpoint says it lasts.
type fetchFunc func(ctx context.Context) (value string, lifetime time.Duration, err error)

// tokens caches minted tokens per host key. A token is used until shortly
// before it expires; from three quarters of its life (at most five minutes
// before its end) one refresh runs in the background while calls keep
// using it, so a call waits for a token endpoint only when there is no
// good token at all — the first call, or after a refresh failed. At most
// one fetch per tokenKey runs at a time: the calls that need it wait for
// that one.
type tokens struct {
	now     func() time.Time
	logger  *slog.Logger
	what    string        // for the log: "entra", "google"
	timeout time.Duration // of one fetch

	mu sync.Mutex
	m  map[tokenKey]*tokenSlot
}

// tokenSlot is one tokenKey's token and its fetch in flight.
type tokenSlot struct {
	tok       token
	refreshAt time.Time
	staleAt   time.Time     // the token is not used from here on
	inflight  chan struct{} // closed when the fetch in flight ends; nil when none
	err       error         // the last fetch's, when it failed
	failures  int           // fetches failed in a row
	retryAt   time.Time     // no fetch before this after a failure
}

// newTokens is a cache for cfg's clock, log and token timeout (set by
// NewAuthorizers).
func newTokens(cfg Config, what string) *tokens {
	return &tokens{now: cfg.Now, logger: cfg.Logger, what: what, timeout: cfg.TokenTimeout, m: map[tokenKey]*tokenSlot{}}
}

// defaultTokenTimeout bounds one token fetch; it runs detached from the
// call that started it, which may go away while others wait for it.
const defaultTokenTimeout = 30 * time.Second

// get returns a good token for k, fetching one with fetch when needed.
// After a failed fetch the next waits a backoff (retryAt): until then a
// call with no good token fails at once, so a broken token endpoint sees
// one fetch at a time, not one per call.
func (t *tokens) get(ctx context.Context, k tokenKey, fetch fetchFunc) (string, error) {
	t.mu.Lock()
	s := t.m[k]
	if s == nil {
		s = &tokenSlot{}
		t.m[k] = s
	}
	now := t.now()
	if s.good(now) {
		if !now.Before(s.refreshAt) && s.inflight == nil && !now.Before(s.retryAt) {
			t.start(k, s, fetch) // refresh ahead, in the background
		}
		v := s.tok.value
		t.mu.Unlock()
		return v, nil
	}
	wait := s.inflight
	if wait == nil {
		if s.err != nil && now.Before(s.retryAt) {
			err := s.err
			t.mu.Unlock()
			return "", err
		}
		wait = t.start(k, s, fetch)
	}
	t.mu.Unlock()
	select {
	case <-wait:
	case <-ctx.Done():
		return "", &CredentialError{Reason: "gave up waiting for a token"}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if s.good(t.now()) {
		return s.tok.value, nil
	}
	if s.err != nil {
		return "", s.err
	}
	return "", &CredentialError{Reason: "the token endpoint's token expired at once"}
}

func (s *tokenSlot) good(now time.Time) bool {
	return s.tok.value != "" && now.Before(s.staleAt)
}

// start runs one fetch for s; t.mu is held.
func (t *tokens) start(k tokenKey, s *tokenSlot, fetch fetchFunc) chan struct{} {
	done := make(chan struct{})
	s.inflight = done
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), t.timeout)
		defer cancel()
		began := t.now()
		v, life, err := fetch(ctx)
		t.mu.Lock()
		defer t.mu.Unlock()
		s.inflight = nil
		close(done)
		if err != nil {
			s.err = err
			s.failures++
			s.retryAt = t.now().Add(min(time.Duration(s.failures)*time.Second, 30*time.Second))
			t.logger.Warn("token fetch failed", "kind", t.what, "host_key", k.key, "error", err.Error())
			return
		}
		s.err, s.failures, s.retryAt = nil, 0, time.Time{}
		exp := began.Add(life)
		s.tok = token{value: v, expires: exp}
		s.refreshAt = exp.Add(-min(life/4, 5*time.Minute))
		s.staleAt = exp.Add(-min(life/10, 30*time.Second))
	}()
	return done
}
