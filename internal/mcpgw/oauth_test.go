package mcpgw_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/snapshot"
)

// The client credentials of the tests' OAuth servers.
const (
	clientID     = "relay-mcp"
	clientSecret = "cl1ent-s3cret-never-shown"
)

// tokenEndpoint is a real OAuth 2.0 token endpoint over TLS: it grants
// client_credentials to clientID/clientSecret presented the way its method
// says (HTTP Basic or the form), counts the grants, and mints tokens
// "tok-1", "tok-2" … that the mock MCP server accepts until revoked.
type tokenEndpoint struct {
	url   string
	roots *x509.CertPool

	post      atomic.Bool  // expect client_secret_post, not Basic
	expiresIn atomic.Int64 // seconds; 0: 3600
	down      atomic.Bool  // answer 503, echoing the secret (as a careless endpoint might)
	grants    atomic.Int64 // grant requests that reached the endpoint
	// gate, when set, holds every grant until it is closed.
	gate atomic.Pointer[chan struct{}]

	mu    sync.Mutex // guards the fields below
	valid map[string]bool
	forms []url.Values
}

func newTokenEndpoint(t testing.TB) *tokenEndpoint {
	t.Helper()
	e := &tokenEndpoint{valid: map[string]bool{}}
	ts := httptest.NewTLSServer(http.HandlerFunc(e.serve))
	t.Cleanup(ts.Close)
	t.Cleanup(e.open) // before Close, which waits for held grants
	e.url, e.roots = ts.URL+"/oauth/token", x509.NewCertPool()
	e.roots.AddCert(ts.Certificate())
	return e
}

func (e *tokenEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	n := e.grants.Add(1)
	if g := e.gate.Load(); g != nil {
		<-*g
	}
	if e.down.Load() {
		http.Error(w, `{"error":"temporarily_unavailable","error_description":"secret `+clientSecret+` rejected"}`, http.StatusServiceUnavailable)
		return
	}
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost || r.PostForm.Get("grant_type") != "client_credentials" {
		http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
		return
	}
	id, secret, basic := r.BasicAuth()
	if e.post.Load() {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		basic = basic || id == ""
	} else {
		id, _ = url.QueryUnescape(id) // RFC 6749 §2.3.1
		secret, _ = url.QueryUnescape(secret)
		basic = !basic || r.PostForm.Has("client_secret")
	}
	if basic || id != clientID || secret != clientSecret {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
		return
	}
	tok := fmt.Sprintf("tok-%d", n)
	life := e.expiresIn.Load()
	if life == 0 {
		life = 3600
	}
	e.mu.Lock()
	e.valid[tok] = true
	e.forms = append(e.forms, r.PostForm)
	e.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": life})
}

// hold makes grants wait until open.
func (e *tokenEndpoint) hold() {
	g := make(chan struct{})
	e.gate.Store(&g)
}

func (e *tokenEndpoint) open() {
	if g := e.gate.Swap(nil); g != nil {
		close(*g)
	}
}

// accepts is the mock MCP server's check of a bearer this endpoint minted.
func (e *tokenEndpoint) accepts(auth string) bool {
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	e.mu.Lock()
	defer e.mu.Unlock()
	return ok && e.valid[tok]
}

func (e *tokenEndpoint) revoke(tok string) {
	e.mu.Lock()
	delete(e.valid, tok)
	e.mu.Unlock()
}

func (e *tokenEndpoint) lastForm() url.Values {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.forms[len(e.forms)-1]
}

// logBuffer keeps what the gateways log.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// useOAuth gives the setup's server client credentials at its token
// endpoint instead of the static header, the mock accepting only the
// endpoint's tokens.
func (s *setup) useOAuth(method string) {
	s.server.AuthHeader, s.server.AuthValue = "", snapshot.Secret{}
	s.server.OAuth = &snapshot.MCPOAuth{TokenURL: s.tokens.url, ClientID: clientID, ClientSecret: snapshot.NewSecret(clientSecret),
		Scopes: []string{"tools.read", "tools.call"}, Audience: "https://tools.example", Resource: s.mock.url, AuthMethod: method}
	s.tokens.post.Store(method == snapshot.MCPOAuthPost)
	f := s.tokens.accepts
	s.mock.authorized.Store(&f)
	s.snap.Store(snapshot.Build(s.data, s.snap.Load().Version()+1, time.Now()))
}

// lastBearer is the last Authorization the mock accepted.
func (m *mockServer) lastBearer() string {
	m.bearersMu.Lock()
	defer m.bearersMu.Unlock()
	if len(m.bearers) == 0 {
		return ""
	}
	return m.bearers[len(m.bearers)-1]
}

// An MCP server with OAuth client credentials gets "Authorization: Bearer
// <token>" from a client_credentials grant, with the client authenticated
// as its method says (Basic by default, or the form), the scopes, audience
// and resource in the grant; one grant serves every later call.
func TestGateway_OAuthClientCredentials(t *testing.T) {
	for _, method := range []string{snapshot.MCPOAuthBasic, snapshot.MCPOAuthPost} {
		t.Run(method, func(t *testing.T) {
			s := newSetup(t)
			s.useOAuth(method)
			cs := agent(t, s.relay, "/mcp", s.granted)
			if got := strings.Join(names(t, cs), ","); got != "tools__echo,tools__fail,tools__slow" {
				t.Fatalf("tools/list = %q", got)
			}
			for i := range 3 {
				res, err := call(cs, "tools__echo")
				if err != nil || res.IsError {
					t.Fatalf("call %d: %+v, %v", i, res, err)
				}
			}
			if n := s.tokens.grants.Load(); n != 1 {
				t.Fatalf("%d grants for a list and 3 calls, want 1", n)
			}
			if b := s.mock.lastBearer(); b != "Bearer tok-1" {
				t.Fatalf("the server got %q, want the granted token", b)
			}
			f := s.tokens.lastForm()
			if f.Get("scope") != "tools.read tools.call" || f.Get("audience") != "https://tools.example" || f.Get("resource") != s.mock.url {
				t.Fatalf("grant form = %v", f)
			}
			if s.mock.unauthorized.Load() != 0 {
				t.Fatalf("the server refused %d requests", s.mock.unauthorized.Load())
			}
		})
	}
}

// Concurrent first calls make one token request between them, per pod.
func TestGateway_OAuthOneGrantForConcurrentCalls(t *testing.T) {
	s := newSetup(t)
	s.useOAuth(snapshot.MCPOAuthBasic)
	var arrived atomic.Int64
	gw := s.relay
	counted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			arrived.Add(1)
		}
		proxyTo(t, w, r, gw, body)
	}))
	t.Cleanup(counted.Close)
	const n = 20
	var sessions []*mcp.ClientSession
	for range n {
		sessions = append(sessions, agent(t, counted.URL, "/mcp", s.granted))
	}
	s.tokens.hold()
	var wg sync.WaitGroup
	var failed atomic.Int64
	for _, cs := range sessions {
		wg.Go(func() {
			if _, err := call(cs, "tools__echo"); err != nil {
				failed.Add(1)
				t.Errorf("call: %v", err)
			}
		})
	}
	poll.Until(t, 10*time.Second, "every call at Relay", func() bool { return arrived.Load() == n })
	s.tokens.open()
	wg.Wait()
	if g := s.tokens.grants.Load(); g != 1 || failed.Load() != 0 {
		t.Fatalf("%d concurrent calls made %d token requests (%d failed), want 1", n, g, failed.Load())
	}
}

// A token is used until shortly before it expires: from three quarters of
// its life a refresh runs in the background while calls keep the old one,
// and past its end a call waits for a new one.
func TestGateway_OAuthRefreshesBeforeExpiry(t *testing.T) {
	s := newSetup(t)
	s.useOAuth(snapshot.MCPOAuthBasic)
	s.tokens.expiresIn.Store(3600)
	cs := agent(t, s.relay, "/mcp", s.granted)
	if _, err := call(cs, "tools__echo"); err != nil {
		t.Fatal(err)
	}
	s.skew.Store(int64(50 * time.Minute)) // good, not yet due
	if _, err := call(cs, "tools__echo"); err != nil || s.tokens.grants.Load() != 1 {
		t.Fatalf("at 50 min: %v, %d grants; want tok-1 still", err, s.tokens.grants.Load())
	}
	s.skew.Store(int64(56 * time.Minute)) // within 5 min of its end: refresh ahead
	if _, err := call(cs, "tools__echo"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the refresh ahead", func() bool { return s.tokens.grants.Load() == 2 })
	poll.Until(t, 10*time.Second, "a call with tok-2", func() bool {
		_, err := call(cs, "tools__echo")
		return err == nil && s.mock.lastBearer() == "Bearer tok-2"
	})
	s.skew.Store(int64(3 * time.Hour)) // both expired: a call waits for tok-3
	if _, err := call(cs, "tools__echo"); err != nil || s.mock.lastBearer() != "Bearer tok-3" || s.tokens.grants.Load() != 3 {
		t.Fatalf("after expiry: %v, bearer %q, %d grants; want tok-3 of grant 3", err, s.mock.lastBearer(), s.tokens.grants.Load())
	}
}

// A 401 from the MCP server drops the token and sends the request once
// more with a new one; a server that refuses that one too is not asked a
// third time.
func TestGateway_OAuthRetriesOnceAfter401(t *testing.T) {
	s := newSetup(t)
	s.useOAuth(snapshot.MCPOAuthBasic)
	cs := agent(t, s.relay, "/mcp", s.granted)
	if _, err := call(cs, "tools__echo"); err != nil {
		t.Fatal(err)
	}
	s.tokens.revoke("tok-1")
	res, err := call(cs, "tools__echo")
	if err != nil || res.IsError {
		t.Fatalf("call after the token was revoked: %+v, %v; want it retried with a new token", res, err)
	}
	if s.tokens.grants.Load() != 2 || s.mock.unauthorized.Load() != 1 || s.mock.lastBearer() != "Bearer tok-2" {
		t.Fatalf("%d grants, %d refused, last bearer %q; want 2, 1, tok-2", s.tokens.grants.Load(), s.mock.unauthorized.Load(), s.mock.lastBearer())
	}
	never := func(string) bool { return false }
	s.mock.authorized.Store(&never)
	grants, refused := s.tokens.grants.Load(), s.mock.unauthorized.Load()
	if _, err := call(cs, "tools__echo"); err == nil {
		t.Fatal("a server refusing every token answered")
	}
	if g, r := s.tokens.grants.Load()-grants, s.mock.unauthorized.Load()-refused; g != 1 || r != 2 {
		t.Fatalf("a server refusing every token: %d more grants, %d more 401s; want 1 and 2 (one retry)", g, r)
	}
}

// A token endpoint that fails is an MCP error naming the server, never the
// secret (not in the error, not in the log, though the endpoint echoed
// it), recorded, and counts toward the server's breaker, which then holds
// it: no more token requests until it lets a probe through.
func TestGateway_OAuthTokenEndpointDown(t *testing.T) {
	s := newSetup(t)
	s.useOAuth(snapshot.MCPOAuthBasic)
	s.tokens.down.Store(true)
	cs := agent(t, s.relay, "/mcp", s.granted)
	var errs []string
	for range 3 {
		_, err := call(cs, "tools__echo")
		if rpcCode(err) != -32031 || !strings.Contains(err.Error(), "mcp server tools") || !strings.Contains(err.Error(), "token endpoint answered 503") {
			t.Fatalf("call with the token endpoint down: %v, want -32031 naming the server and the endpoint's status", err)
		}
		errs = append(errs, err.Error())
	}
	grants := s.tokens.grants.Load()
	_, err := call(cs, "tools__echo")
	if err == nil || !strings.Contains(err.Error(), "held by its breaker") {
		t.Fatalf("after 3 token failures: %v, want held", err)
	}
	if s.tokens.grants.Load() != grants || s.mock.calls.Load() != 0 {
		t.Fatalf("a held server's token endpoint got %d more requests, the server %d calls", s.tokens.grants.Load()-grants, s.mock.calls.Load())
	}
	recs := s.rec.all()
	if len(recs) != 4 || recs[0].Status != http.StatusBadGateway || recs[0].ErrorKind != "mcp_oauth_failed" || recs[3].ErrorKind != "mcp_server_held" {
		t.Fatalf("records = %+v", recs)
	}
	for _, where := range append(errs, err.Error(), s.logs.String()) {
		if strings.Contains(where, clientSecret) {
			t.Fatalf("the client secret leaked: %s", where)
		}
	}
	// tools/list leaves the failing server out, and says nothing of the secret either.
	if got := names(t, agent(t, s.relay, "/mcp", s.granted)); len(got) != 0 {
		t.Fatalf("tools/list with the server held: %q", got)
	}
}

// A wrong client secret is the endpoint's 401 invalid_client, named so.
func TestGateway_OAuthRefusedClient(t *testing.T) {
	s := newSetup(t)
	s.useOAuth(snapshot.MCPOAuthBasic)
	s.server.OAuth.ClientSecret = snapshot.NewSecret("wrong-" + clientSecret)
	s.snap.Store(snapshot.Build(s.data, s.snap.Load().Version()+1, time.Now()))
	cs := agent(t, s.relay, "/mcp", s.granted)
	_, err := call(cs, "tools__echo")
	if rpcCode(err) != -32031 || !strings.Contains(err.Error(), "401 invalid_client") || strings.Contains(err.Error(), clientSecret) {
		t.Fatalf("a refused client: %v", err)
	}
	if strings.Contains(s.logs.String(), clientSecret) {
		t.Fatal("the client secret is in the log")
	}
}

// proxyTo passes one request on to base and copies the answer back.
func proxyTo(t *testing.T, w http.ResponseWriter, r *http.Request, base string, body []byte) {
	req, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method, base+r.URL.Path, bytes.NewReader(body))
	if err != nil {
		t.Error(err)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}
