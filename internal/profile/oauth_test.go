package profile

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/relay-llm/relay/internal/egress"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/upstream"
	"github.com/relay-llm/relay/internal/wire"
)

// tokenFixture is a service account's key and the credentials built on
// it, for the token-exchange tests.
type tokenFixture struct {
	pemKey string
}

func newTokenFixture(t *testing.T) tokenFixture {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	return tokenFixture{pemKey: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))}
}

// account is the service-account JSON with tokenURI as its token_uri.
func (f tokenFixture) account(tokenURI string) snapshot.Secret {
	b, _ := json.Marshal(map[string]string{"type": "service_account", "client_email": "sa@p.iam.gserviceaccount.com",
		"private_key_id": "k1", "private_key": f.pemKey, "token_uri": tokenURI})
	return snapshot.NewSecret(string(b))
}

// keyLines are the base64 lines of the private key: none may show.
func (f tokenFixture) keyLines() []string {
	var out []string
	for _, l := range strings.Split(f.pemKey, "\n") {
		if len(l) > 40 && !strings.HasPrefix(l, "-----") {
			out = append(out, l)
		}
	}
	return out
}

const entraSecret = "entra-client-secret-Q8~s3cr3t-value"

// authorizeVia runs one Authorize for kind ("entra" or "google") whose
// token endpoint is tokenURL.
func authorizeVia(ctx context.Context, a *Authorizers, f tokenFixture, kind, tokenURL string) (*http.Request, error) {
	req, _ := http.NewRequest(http.MethodPost, "https://upstream.example/x", nil)
	if kind == "entra" {
		host := &snapshot.Host{Slug: "azure", Profile: "azure_openai", ProfileParams: map[string]string{
			"api_version": "2024-10-21", "tenant_id": "t1", "client_id": "app1", "token_url": tokenURL}}
		hk := &snapshot.HostKey{ID: uuid.New(), Slug: "entra", Secret: snapshot.NewSecret(entraSecret)}
		return req, a.Authorize(ctx, req, nil, Lookup("azure_openai"), wire.ShapeOpenAI, host, hk)
	}
	host := &snapshot.Host{Slug: "vertex", Profile: "vertex", ProfileParams: map[string]string{"project": "p", "location": "us-central1"}}
	hk := &snapshot.HostKey{ID: uuid.New(), Slug: "sa", Secret: f.account(tokenURL)}
	return req, a.Authorize(ctx, req, nil, Lookup("vertex"), wire.ShapeGemini, host, hk)
}

// Token requests go through the upstream transport, so the egress guard
// checks the address a token endpoint's name resolves to at the dial, not
// only the name when it was written. A rebinding-style resolver tells the
// write-time check that the name is a public address in the allow-list;
// the dial then resolves it to 127.0.0.1, outside the list, and is
// refused: no request reaches the endpoint. With no allow-list the same
// URL is reached, so the refusal is the guard's, not a broken endpoint.
// A token URL at Relay's own listener is refused too, through the
// transport NewAuthorizers makes itself.
func TestTokenExchange_DialsThroughTheEgressGuard(t *testing.T) {
	t.Parallel()
	f := newTokenFixture(t)
	var posted atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posted.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"at-ok","expires_in":3600,"token_type":"Bearer"}`))
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	// The write-time check asks resolve, which says the name is a public
	// address in the allow-list; the dial asks the test's DNS, which says
	// 127.0.0.1.
	rebinding := "http://tokens.rebind.test:" + port + "/oauth/token"
	resolve := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
	}
	dns := pipeDNS(netip.MustParseAddr("127.0.0.1"))
	publicOnly, err := egress.New([]string{"93.184.216.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	if err := publicOnly.CheckURL(t.Context(), rebinding, resolve); err != nil {
		t.Fatalf("the write-time check refuses the rebinding name already (%v): the test proves nothing", err)
	}
	ownListener, _ := egress.New(nil)
	ownListener.SetListeners(srv.Listener.Addr())

	for _, kind := range []string{"entra", "google"} {
		for _, tc := range []struct {
			name     string
			guard    *egress.Guard
			tokenURL string
			refused  bool
		}{
			{"rebinding to a private address", publicOnly, rebinding, true},
			{"Relay's own listener", ownListener, srv.URL + "/oauth/token", true},
			{"no allow-list", nil, rebinding, false},
		} {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				cfg := Config{Egress: tc.guard, Resolve: resolve}
				if tc.tokenURL == rebinding {
					cfg.Transport = upstream.New(upstream.Options{Guard: tc.guard, Resolver: dns})
				}
				a := NewAuthorizers(cfg)
				before := posted.Load()
				req, err := authorizeVia(t.Context(), a, f, kind, tc.tokenURL)
				if !tc.refused {
					if err != nil || req.Header.Get("Authorization") != "Bearer at-ok" {
						t.Fatalf("an allowed token endpoint: %v %q", err, req.Header.Get("Authorization"))
					}
					return
				}
				var ce *CredentialError
				if !errors.As(err, &ce) || !ce.Refused || !strings.Contains(ce.Reason, "refused") {
					t.Fatalf("want the egress rule's refusal, got %v", err)
				}
				if posted.Load() != before {
					t.Fatal("the token request reached the endpoint")
				}
			})
		}
	}
}

// Every way a token exchange fails yields a CredentialError, and neither
// it nor the log line the token cache writes shows the client secret, the
// private key, the signed assertion or a token the endpoint sent back in
// its failed answer — though each endpoint below echoes them.
func TestTokenExchange_FailuresShowNoSecret(t *testing.T) {
	t.Parallel()
	f := newTokenFixture(t)
	const leaked = "at-leaked-7f3a9c"
	// echo writes the request's form (secret, assertion) and a token into
	// the answer.
	echo := func(r *http.Request) string {
		_ = r.ParseForm()
		return strings.ReplaceAll(r.PostForm.Encode(), `"`, ``) + " " + leaked
	}
	handler := func(fn func(w http.ResponseWriter, r *http.Request)) string {
		srv := httptest.NewServer(http.HandlerFunc(fn))
		t.Cleanup(srv.Close)
		return srv.URL + "/token"
	}
	badStatus := handler(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"access_token":"`+leaked+`","error":"server_error","error_description":"`+echo(r)+`"}`)
	})
	badJSON := handler(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token": `+echo(r))
	})
	invalidGrant := handler(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"invalid_grant","error_description":"bad grant `+echo(r)+`"}`)
	})
	oversize := handler(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"`+leaked+`","expires_in":3600,"pad":"`+strings.Repeat(echo(r), 1+maxTokenAnswer/len(echo(r)))+`"}`)
	})
	// The slow endpoint holds each request until the test ends; the token
	// request's own timeout gives up first.
	release := make(chan struct{})
	slow := handler(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) }) // runs before the server's Close
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"access_token":"`+leaked+`"}`)
	}))
	t.Cleanup(tlsSrv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedURL := "http://" + ln.Addr().String() + "/token"
	_ = ln.Close()

	for _, kind := range []string{"entra", "google"} {
		for _, tc := range []struct {
			name, url string
			refused   bool   // the host key is to be held
			reason    string // what the error says
		}{
			{"bad status", badStatus, false, "answered 500 server_error"},
			{"bad JSON", badJSON, false, "not a JSON object"},
			{"invalid_grant", invalidGrant, true, "answered 400 invalid_grant"},
			{"timeout", slow, false, "timed out"},
			{"TLS error", tlsSrv.URL + "/token", false, "TLS"},
			{"refused dial", refusedURL, false, "refused the connection"},
			{"oversize body", oversize, false, "over 64 KiB"},
		} {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				var logs syncBuffer
				a := NewAuthorizers(Config{
					Logger:       slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
					TokenTimeout: 300 * time.Millisecond,
				})
				_, err := authorizeVia(t.Context(), a, f, kind, tc.url)
				var ce *CredentialError
				if !errors.As(err, &ce) {
					t.Fatalf("want a CredentialError, got %v", err)
				}
				if ce.Refused != tc.refused || !strings.Contains(ce.Reason, tc.reason) {
					t.Fatalf("got %q (refused %v), want %q (refused %v)", ce.Reason, ce.Refused, tc.reason, tc.refused)
				}
				logged := logs.String()
				if !strings.Contains(logged, "token fetch failed") {
					t.Fatalf("the failure was not logged: %q", logged)
				}
				secrets := append([]string{entraSecret, "PRIVATE KEY", leaked, "client_secret", "assertion", "eyJ"}, f.keyLines()...)
				for _, s := range secrets {
					if strings.Contains(err.Error(), s) || strings.Contains(logged, s) {
						t.Fatalf("%q shows in the error %q or the log %q", s, err, logged)
					}
				}
			})
		}
	}
}

// syncBuffer is a bytes.Buffer a logger may write from another goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// pipeDNS is a resolver whose DNS server runs in the test, over a pipe:
// every A query is answered with addr, every other with no records.
func pipeDNS(addr netip.Addr) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		client, server := net.Pipe()
		go serveDNS(server, addr)
		return client, nil
	}}
}

// serveDNS answers queries on c, framed as DNS over TCP (a pipe is not a
// PacketConn), until the resolver closes it.
func serveDNS(c net.Conn, addr netip.Addr) {
	defer c.Close()
	for {
		var n [2]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		msg := make([]byte, int(n[0])<<8|int(n[1]))
		if _, err := io.ReadFull(c, msg); err != nil {
			return
		}
		var q dnsmessage.Message
		if q.Unpack(msg) != nil || len(q.Questions) != 1 {
			return
		}
		ans := dnsmessage.Message{
			Header:    dnsmessage.Header{ID: q.ID, Response: true, Authoritative: true, RecursionDesired: q.RecursionDesired},
			Questions: q.Questions,
		}
		if q.Questions[0].Type == dnsmessage.TypeA {
			ans.Answers = []dnsmessage.Resource{{
				Header: dnsmessage.ResourceHeader{Name: q.Questions[0].Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60},
				Body:   &dnsmessage.AResource{A: addr.As4()},
			}}
		}
		out, err := ans.Pack()
		if err != nil {
			return
		}
		if _, err := c.Write(append([]byte{byte(len(out) >> 8), byte(len(out))}, out...)); err != nil {
			return
		}
	}
}
