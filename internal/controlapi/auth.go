package controlapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/store"
)

// Authentication: the admin bearer (RELAY_ADMIN_TOKEN or the token in
// RELAY_ADMIN_TOKEN_FILE, compared in constant time) is a superuser acting
// as "admin-token:<id>", the id naming which token (AdminTokenActor); a
// session cookie is a user
// acting as "user:<uuid>" with the verbs of its role bindings. Relay keys and
// inference tokens are not accepted here.

const (
	// CookieName is the session cookie.
	CookieName = "relay_session"
	// CSRFHeader carries the session's CSRF token on cookie-authenticated writes.
	CSRFHeader = "X-CSRF-Token"
	// AdminActor begins the audit actor of the admin bearer:
	// "admin-token:<id>" (AdminTokenActor).
	AdminActor = "admin-token"
)

// caller is the authenticated principal of one request.
type caller struct {
	*rbac.Subject
	actor   string
	user    *store.User    // nil for the admin token
	session *store.Session // nil for the admin token

	// asked is every verb one operation asked about (authz.go): the layer
	// over the operations gives each its own caller and, after the
	// handler, checks that the operation asked what its rule names.
	asked *atomic.Uint32
}

type callerKey struct{}

func withCaller(ctx context.Context, c *caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// callerFrom returns the request's caller. Every operation but login runs
// behind authentication, so a missing caller is a wiring bug, reported as 401.
func callerFrom(ctx context.Context) (*caller, error) {
	c, ok := ctx.Value(callerKey{}).(*caller)
	if !ok || c == nil {
		return nil, unauthenticated("sign in or send the admin token")
	}
	return c, nil
}

func userActor(id uuid.UUID) string { return "user:" + id.String() }

// authenticate finds the caller of r: the admin bearer first, else the session cookie.
func (s *Server) authenticate(ctx context.Context, r *http.Request) (*caller, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return nil, unauthenticated("the bearer token is not the admin token")
		}
		actor, err := s.admin.match(strings.TrimSpace(token), s.now(), s.log)
		if err != nil {
			return nil, err
		}
		return &caller{Subject: rbac.Superuser(), actor: actor}, nil
	}
	ck, err := r.Cookie(CookieName)
	if err != nil || ck.Value == "" {
		return nil, unauthenticated("sign in or send the admin token")
	}
	sess, err := s.st.Sessions().GetByHash(ctx, tokenHash(ck.Value))
	if errors.Is(err, store.ErrNotFound) {
		return nil, unauthenticated("the session has ended; sign in again")
	}
	if err != nil {
		return nil, err
	}
	return s.userCaller(ctx, sess.UserID, &sess)
}

// userCaller loads a user and its grants; a disabled or deleted user is 401.
func (s *Server) userCaller(ctx context.Context, userID uuid.UUID, sess *store.Session) (*caller, error) {
	u, err := s.st.Users().Get(ctx, userID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && u.Disabled) {
		return nil, unauthenticated("the user is disabled or gone; sign in again")
	}
	if err != nil {
		return nil, err
	}
	rows, err := s.st.RoleBindings().ListGrantsByUser(ctx, userID)
	if err != nil {
		return nil, err
	}
	grants := make([]rbac.Grant, 0, len(rows))
	for _, g := range rows {
		var sc rbac.Scope
		switch {
		case g.ProjectID != nil && g.ProjectTeamID != nil:
			sc = rbac.InProject(*g.ProjectTeamID, *g.ProjectID)
		case g.TeamID != nil:
			sc = rbac.InTeam(*g.TeamID)
		}
		grants = append(grants, rbac.Grant{Role: rbac.Role(g.Role), Scope: sc})
	}
	return &caller{Subject: rbac.ForUser(userID, grants), actor: userActor(userID), user: &u, session: sess}, nil
}

// checkCSRF refuses a cookie-authenticated write without the session's CSRF token.
func (c *caller) checkCSRF(r *http.Request) error {
	if c.session == nil {
		return nil
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	got := r.Header.Get(CSRFHeader)
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(c.session.CSRFToken)) != 1 {
		return &apiError{status: http.StatusForbidden, code: codeCSRF,
			message: "send the session's CSRF token in " + CSRFHeader + " (login and whoami return it)"}
	}
	return nil
}

// randomToken is 32 random bytes, base64url: session tokens and CSRF tokens.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b)
}

// tokenHash is what a session row stores of its token.
func tokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

func (s *Server) sessionCookie(ctx context.Context, token string, expires time.Time) *http.Cookie {
	return &http.Cookie{
		Name: CookieName, Value: token, Path: "/", Expires: expires,
		MaxAge:   max(1, int(expires.Sub(s.now()).Seconds())),
		HttpOnly: true, Secure: s.secureCookie(ctx), SameSite: http.SameSiteStrictMode,
	}
}

func (s *Server) clearedCookie(ctx context.Context) *http.Cookie {
	return &http.Cookie{
		Name: CookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: s.secureCookie(ctx), SameSite: http.SameSiteStrictMode,
	}
}

// loginThrottle keeps sign-ins from being a way in or a way down, in this
// process: after max failures for an email within window, further attempts
// get 429 until the window ends; and every attempt takes a token from its
// client address's bucket and its email's, so one client cannot spray
// guesses across emails nor many clients pile onto one email.
type loginThrottle struct {
	max    int
	window time.Duration
	ips    *buckets // per client address (the TCP peer: the control plane is on a private network)
	emails *buckets // per email, attempts of any outcome

	mu    sync.Mutex
	fails map[string]*loginFails // guarded by mu
}

type loginFails struct {
	n     int
	first time.Time
}

func newLoginThrottle(max int, window time.Duration) *loginThrottle {
	return &loginThrottle{max: max, window: window, fails: make(map[string]*loginFails),
		ips:    newBuckets(30, 2*time.Second, 10000),
		emails: newBuckets(10, 6*time.Second, 10000),
	}
}

// blocked returns how long email must wait, 0 when it may try (the try is
// counted).
func (t *loginThrottle) blocked(email string, now time.Time) time.Duration {
	t.mu.Lock()
	f := t.fails[email]
	var wait time.Duration
	if f != nil {
		if end := f.first.Add(t.window); !now.Before(end) {
			delete(t.fails, email)
		} else if f.n >= t.max {
			wait = end.Sub(now)
		}
	}
	t.mu.Unlock()
	if wait > 0 {
		return wait
	}
	return t.emails.take(email, now)
}

func (t *loginThrottle) fail(email string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.fails) > 10000 { // bound the memory a spray of emails can take
		for k, f := range t.fails {
			if !now.Before(f.first.Add(t.window)) {
				delete(t.fails, k)
			}
		}
	}
	f := t.fails[email]
	if f == nil || !now.Before(f.first.Add(t.window)) {
		f = &loginFails{first: now}
		t.fails[email] = f
	}
	f.n++
}

func (t *loginThrottle) reset(email string) {
	t.mu.Lock()
	delete(t.fails, email)
	t.mu.Unlock()
}

// admitAddr takes a token from the bucket of r's client address; when none
// is left it returns the 429 to answer.
func (t *loginThrottle) admitAddr(r *http.Request, now time.Time) error {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if wait := t.ips.take(host, now); wait > 0 {
		return tooManySignIns(wait)
	}
	return nil
}

func tooManySignIns(wait time.Duration) error {
	return &apiError{status: http.StatusTooManyRequests, code: codeRateLimited,
		message: "too many sign-ins; try again later", retryAfter: int(math.Ceil(wait.Seconds()))}
}

// buckets is a token bucket per key, in memory: burst tokens, one back every
// refill. It holds at most max keys; when full it forgets the buckets that
// have refilled (they say nothing), and if none has, all of them — bounded
// memory matters more than the throttle's memory of a flood.
type buckets struct {
	burst  float64
	refill time.Duration
	max    int

	mu sync.Mutex
	m  map[string]*bucket // guarded by mu
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newBuckets(burst int, refill time.Duration, max int) *buckets {
	return &buckets{burst: float64(burst), refill: refill, max: max, m: make(map[string]*bucket)}
}

// take takes a token from key's bucket and returns 0, or, when it is empty,
// how long until it holds one.
func (b *buckets) take(key string, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.m[key]
	if k == nil {
		if len(b.m) >= b.max {
			b.evict(now)
		}
		k = &bucket{tokens: b.burst, at: now}
		b.m[key] = k
	}
	k.tokens = min(b.burst, k.tokens+float64(now.Sub(k.at))/float64(b.refill))
	k.at = now
	if k.tokens >= 1 {
		k.tokens--
		return 0
	}
	return time.Duration((1 - k.tokens) * float64(b.refill))
}

func (b *buckets) evict(now time.Time) {
	for key, k := range b.m {
		if k.tokens+float64(now.Sub(k.at))/float64(b.refill) >= b.burst {
			delete(b.m, key)
		}
	}
	if len(b.m) >= b.max {
		clear(b.m)
	}
}
