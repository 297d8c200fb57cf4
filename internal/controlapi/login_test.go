package controlapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/secret"
	"github.com/relay-llm/relay/internal/store"
)

// loginSetup is a control API whose password hashing the test can hold and
// count.
type loginSetup struct {
	srv     *httptest.Server
	s       *Server
	gate    chan struct{} // hashing waits until it is closed
	running atomic.Int32  // hashes in flight
	peak    atomic.Int32  // most hashes ever in flight at once
}

func newLoginSetup(t *testing.T, cfg Config) *loginSetup {
	t.Helper()
	st, err := store.Open(t.Context(), pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	box, err := secret.NewBox(bytes.Repeat([]byte{7}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store, cfg.Box, cfg.Logger = st, box, slog.New(slog.DiscardHandler)
	s, err := newServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := &loginSetup{s: s, gate: make(chan struct{})}
	s.passwords.idKey = func(password, salt []byte, tm, mem uint32, th uint8, n uint32) []byte {
		now := l.running.Add(1)
		for p := l.peak.Load(); now > p && !l.peak.CompareAndSwap(p, now); p = l.peak.Load() {
		}
		<-l.gate
		l.running.Add(-1)
		return make([]byte, n)
	}
	l.srv = httptest.NewServer(s)
	t.Cleanup(l.srv.Close)
	return l
}

type loginAnswer struct {
	status     int
	code       string
	retryAfter string
}

func (l *loginSetup) login(t *testing.T, email string) loginAnswer {
	resp, err := http.Post(l.srv.URL+"/api/auth/login", "application/json",
		strings.NewReader(fmt.Sprintf(`{"email":%q,"password":"guess"}`, email)))
	if err != nil {
		t.Error(err)
		return loginAnswer{}
	}
	defer resp.Body.Close()
	var body struct {
		Error struct{ Code string } `json:"error"`
	}
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &body)
	return loginAnswer{resp.StatusCode, body.Error.Code, resp.Header.Get("Retry-After")}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline
	}
}

func TestLogin_HashesRunUnderTheConcurrencyCap(t *testing.T) {
	const logins = 16
	l := newLoginSetup(t, Config{LoginHashes: 2, LoginWait: time.Minute})
	l.s.logins.ips = newBuckets(logins, time.Hour, 100)
	var wg sync.WaitGroup
	answers := make(chan loginAnswer, logins)
	for i := range logins {
		wg.Go(func() { answers <- l.login(t, fmt.Sprintf("nobody-%d@example.com", i)) })
	}
	// Every sign-in has arrived: two hash, the others wait for a slot.
	waitUntil(t, "two hashes run and the rest wait", func() bool {
		return l.running.Load() == 2 && len(l.s.passwords.slots) == 2 && l.s.passwords.waiting.Load() == logins-2
	})
	close(l.gate)
	wg.Wait()
	close(answers)
	for a := range answers {
		if a.status != http.StatusUnauthorized {
			t.Fatalf("a sign-in answered %+v, want 401", a)
		}
	}
	if p := l.peak.Load(); p != 2 {
		t.Fatalf("%d hashes ran at once, cap 2", p)
	}
}

func TestLogin_BusyAnswers429WithRetryAfter(t *testing.T) {
	l := newLoginSetup(t, Config{LoginHashes: 1, LoginWait: 50 * time.Millisecond})
	first := make(chan loginAnswer, 1)
	go func() { first <- l.login(t, "first@example.com") }()
	waitUntil(t, "the first sign-in hashes", func() bool { return l.running.Load() == 1 })
	if a := l.login(t, "second@example.com"); a.status != 429 || a.code != "rate_limited" || a.retryAfter == "" {
		t.Fatalf("a sign-in with every slot taken = %+v, want 429 rate_limited with Retry-After", a)
	}
	close(l.gate)
	if a := <-first; a.status != 401 {
		t.Fatalf("the first sign-in = %+v", a)
	}
}

func TestLogin_ThrottlesPerClientAndPerEmail(t *testing.T) {
	l := newLoginSetup(t, Config{})
	close(l.gate)
	l.s.logins.ips = newBuckets(3, time.Hour, 100)
	for i := range 3 {
		if a := l.login(t, fmt.Sprintf("spray-%d@example.com", i)); a.status != 401 {
			t.Fatalf("sign-in %d = %+v", i, a)
		}
	}
	a := l.login(t, "spray-3@example.com")
	if a.status != 429 || a.code != "rate_limited" || a.retryAfter == "" {
		t.Fatalf("a fourth sign-in from one client = %+v, want 429 rate_limited with Retry-After", a)
	}
	if l.running.Load() != 0 || l.peak.Load() != 1 {
		t.Fatal("a throttled sign-in was hashed")
	}

	// Per email, whatever the outcome: the failure throttle is off here.
	l2 := newLoginSetup(t, Config{LoginAttempts: 1000})
	close(l2.gate)
	l2.s.logins.emails = newBuckets(2, time.Hour, 100)
	for range 2 {
		if a := l2.login(t, "target@example.com"); a.status != 401 {
			t.Fatalf("sign-in = %+v", a)
		}
	}
	if a := l2.login(t, "target@example.com"); a.status != 429 || a.retryAfter == "" {
		t.Fatalf("a third sign-in for one email = %+v, want 429", a)
	}
	if a := l2.login(t, "other@example.com"); a.status != 401 {
		t.Fatalf("another email = %+v, want 401", a)
	}
}

func TestBuckets_StayBounded(t *testing.T) {
	b := newBuckets(1, time.Hour, 100)
	now := time.Now()
	for i := range 10000 {
		b.take(fmt.Sprint(i), now)
	}
	if n := len(b.m); n > 100 {
		t.Fatalf("%d buckets kept, max 100", n)
	}
}
