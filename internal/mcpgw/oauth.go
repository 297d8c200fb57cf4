package mcpgw

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/relay-llm/relay/internal/egress"
	"github.com/relay-llm/relay/internal/snapshot"
	relayupstream "github.com/relay-llm/relay/internal/upstream"
)

// OAuth client credentials as an MCP server's credential (docs/mcp.md,
// "Credentials"): Relay fetches an access token with the client_credentials
// grant (RFC 6749 §4.4) and presents it as "Authorization: Bearer <token>".
//
// The grant itself is golang.org/x/oauth2/clientcredentials' (the form, the
// client's Basic or form authentication with RFC 6749 §2.3.1's escaping,
// the answer as JSON or a form, expires_in as a number or a string, the
// error answer of §5.2). Its caching is not used: its ReuseTokenSource
// refreshes only once a token has expired, on the caller's time, and has
// no way to drop a token the server refused. tokenSource caches instead.

// OAuth is an MCP server's client credentials as this package uses them:
// comparable, so a changed row makes a new upstream and a new token cache.
type OAuth struct {
	TokenURL     string // "" for none
	ClientID     string
	ClientSecret string
	Scopes       string // space-separated, as the grant's scope parameter
	Audience     string
	Resource     string
	// Post authenticates the client with the form's client_id and
	// client_secret (client_secret_post); else HTTP Basic.
	Post bool
}

// oauthOf is m's OAuth, the zero OAuth for none.
func oauthOf(m *snapshot.MCPServer) OAuth {
	o := m.OAuth
	if o == nil {
		return OAuth{}
	}
	return OAuth{TokenURL: o.TokenURL, ClientID: o.ClientID, ClientSecret: o.ClientSecret.Reveal(),
		Scopes: strings.Join(o.Scopes, " "), Audience: o.Audience, Resource: o.Resource, Post: o.AuthMethod == snapshot.MCPOAuthPost}
}

// TokenError is a failure to get an access token from an MCP server's token
// endpoint. Reason names what went wrong by its kind and the endpoint's
// status and OAuth error code, never the endpoint's text (it may echo the
// secret) nor the secret.
type TokenError struct{ Reason string }

func (e *TokenError) Error() string { return "oauth token: " + e.Reason }

// tokenTimeout bounds one token fetch. It runs detached from the call that
// started it, since others may be waiting for it.
const tokenTimeout = 30 * time.Second

// tokenSource is one MCP server's access token on this pod: fetched when
// there is none, used until shortly before it expires, refreshed ahead in
// the background from three quarters of its life, and dropped when the
// server answers 401 to it. At most one fetch runs at a time; calls that
// need a token wait for that one (single flight).
type tokenSource struct {
	cfg *clientcredentials.Config
	// base carries the token endpoint's client (oauth2.HTTPClient): over
	// the server's transport (the egress guard), following no redirect.
	base context.Context
	now  func() time.Time

	mu        sync.Mutex // guards the fields below
	tok       string
	refreshAt time.Time     // a refresh starts in the background from here
	staleAt   time.Time     // the token is not used from here on
	inflight  chan struct{} // closed when the fetch in flight ends; nil when none
	err       error         // the last fetch's, while there is no token
}

// newTokenSource is the token cache of o, fetching through base.
func newTokenSource(o OAuth, base http.RoundTripper, now func() time.Time) *tokenSource {
	cfg := &clientcredentials.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, TokenURL: o.TokenURL,
		AuthStyle: oauth2.AuthStyleInHeader, EndpointParams: url.Values{}}
	if o.Post {
		cfg.AuthStyle = oauth2.AuthStyleInParams
	}
	if o.Scopes != "" {
		cfg.Scopes = strings.Fields(o.Scopes)
	}
	if o.Audience != "" {
		cfg.EndpointParams.Set("audience", o.Audience)
	}
	if o.Resource != "" {
		cfg.EndpointParams.Set("resource", o.Resource)
	}
	hc := relayupstream.HTTPClient(base, "", "")
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if now == nil {
		now = time.Now
	}
	return &tokenSource{cfg: cfg, base: context.WithValue(context.Background(), oauth2.HTTPClient, hc), now: now}
}

// token returns a good access token, fetching one when there is none.
func (t *tokenSource) token(ctx context.Context) (string, error) {
	t.mu.Lock()
	now := t.now()
	if t.tok != "" && now.Before(t.staleAt) {
		if !now.Before(t.refreshAt) && t.inflight == nil {
			t.start() // refresh ahead: this call keeps the good token
		}
		v := t.tok
		t.mu.Unlock()
		return v, nil
	}
	wait := t.inflight
	if wait == nil {
		wait = t.start()
	}
	t.mu.Unlock()
	select {
	case <-wait:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tok != "" {
		return t.tok, nil
	}
	if t.err != nil {
		return "", t.err
	}
	return "", &TokenError{Reason: "the token endpoint's token expired at once"}
}

// drop forgets tok after the server refused it, so the next call fetches
// a new one; a token fetched since is kept.
func (t *tokenSource) drop(tok string) {
	t.mu.Lock()
	if t.tok == tok {
		t.tok = ""
	}
	t.mu.Unlock()
}

// start runs one fetch; t.mu is held.
func (t *tokenSource) start() chan struct{} {
	done := make(chan struct{})
	t.inflight = done
	go func() {
		ctx, cancel := context.WithTimeout(t.base, tokenTimeout)
		defer cancel()
		began := t.now()
		tok, err := t.cfg.Token(ctx)
		t.mu.Lock()
		defer t.mu.Unlock()
		t.inflight = nil
		defer close(done)
		if err == nil && tok.TokenType != "" && !strings.EqualFold(tok.TokenType, "bearer") {
			err = &TokenError{Reason: "the token endpoint sent a token of type " + safeCode(strings.ToLower(tok.TokenType)) + ", not bearer"}
		}
		if err != nil {
			t.err = tokenError(err)
			if !t.now().Before(t.staleAt) {
				t.tok = "" // a failed refresh ahead keeps a token that is still good
			}
			return
		}
		life := time.Duration(tok.ExpiresIn) * time.Second
		if life <= 0 && !tok.Expiry.IsZero() {
			life = time.Until(tok.Expiry)
		}
		if life <= 0 || life > 7*24*time.Hour {
			life = time.Hour // no (or a senseless) expires_in: an hour, as most endpoints give
		}
		exp := began.Add(life)
		t.tok, t.err = tok.AccessToken, nil
		t.refreshAt = exp.Add(-min(life/4, 5*time.Minute))
		t.staleAt = exp.Add(-min(life/10, 30*time.Second))
	}()
	return done
}

// tokenError names a failed fetch by its kind, never by its text: a
// RetrieveError carries the endpoint's answer, which may echo the secret.
func tokenError(err error) error {
	var re *oauth2.RetrieveError
	var cv *tls.CertificateVerificationError
	var ue x509.UnknownAuthorityError
	var he x509.HostnameError
	var ne net.Error
	var te *TokenError
	switch {
	case errors.As(err, &te):
		return te
	case errors.As(err, &re):
		reason := "the token endpoint answered"
		if re.Response != nil {
			reason += " " + strconv.Itoa(re.Response.StatusCode)
		}
		if c := safeCode(re.ErrorCode); c != "" {
			reason += " " + c
		}
		return &TokenError{Reason: reason}
	case errors.Is(err, egress.ErrRefused):
		return &TokenError{Reason: "the token endpoint is refused by the egress rule (RELAY_UPSTREAM_ALLOW, Relay's own listeners, metadata addresses)"}
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return &TokenError{Reason: "the token endpoint timed out"}
	case errors.As(err, &cv), errors.As(err, &ue), errors.As(err, &he):
		return &TokenError{Reason: "the token endpoint's TLS handshake failed"}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &TokenError{Reason: "the token endpoint refused the connection"}
	case strings.Contains(err.Error(), "missing access_token"):
		return &TokenError{Reason: "the token endpoint sent no access_token"}
	case strings.HasPrefix(err.Error(), "oauth2: cannot parse"):
		return &TokenError{Reason: "the token endpoint's answer is not a token"}
	}
	return &TokenError{Reason: "the token endpoint is unreachable"}
}

// safeCode is an OAuth error code if it looks like one (invalid_client …),
// else "": it goes into errors and logs, so nothing free-form.
func safeCode(s string) string {
	if len(s) > 40 {
		return ""
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c == '_' || c == '-') {
			return ""
		}
	}
	return s
}

// bearerTransport presents the server's access token on every request and,
// when the server answers 401, drops it and sends the request once more
// with a new one (not the DELETE that ends a session: the next request
// fetches the new token).
type bearerTransport struct {
	base   http.RoundTripper
	tokens *tokenSource
}

func (t *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := t.tokens.token(r.Context())
	if err != nil {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, err
	}
	resp, err := t.send(r, r.Body, tok)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || (r.Body != nil && r.GetBody == nil) {
		return resp, err
	}
	t.tokens.drop(tok)
	if r.Method == http.MethodDelete {
		return resp, nil // a session's end: nothing to retry for
	}
	tok, err = t.tokens.token(r.Context())
	if err != nil {
		return resp, nil // the server's 401 stands
	}
	body := r.Body
	if r.GetBody != nil {
		if body, err = r.GetBody(); err != nil {
			return resp, nil
		}
	}
	_ = resp.Body.Close()
	return t.send(r, body, tok)
}

// send sends a copy of r with body and the token.
func (t *bearerTransport) send(r *http.Request, body io.ReadCloser, tok string) (*http.Response, error) {
	c := r.Clone(r.Context())
	c.Body = body
	c.Header.Set("Authorization", "Bearer "+tok)
	return t.base.RoundTrip(c)
}
