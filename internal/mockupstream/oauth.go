package mockupstream

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Cloud is the mock's cloud faces in front of a Server: Azure OpenAI
// (azure.go), Vertex AI (vertex.go), the OpenAI-compatible servers
// (compat.go) and the token endpoints that issue
// their credentials — Microsoft Entra ID's client-credentials grant at
// /oauth/entra/{tenant}/oauth2/v2.0/token and Google's JWT bearer grant at
// /oauth/google/token, whose assertion it verifies (RS256, with the
// service account's public key; iss, aud and exp). Tokens expire after
// CloudOptions.TokenLifetime, and a face refuses an expired one as the
// service does (401). It counts the tokens it issued.
type Cloud struct {
	inner *Server
	opts  CloudOptions
	now   func() time.Time

	issued atomic.Int64
	mu     sync.Mutex
	tokens map[string]time.Time // access token → expiry
}

// CloudOptions configures a Cloud.
type CloudOptions struct {
	// APIKeys are the Azure api-keys the Azure face accepts.
	APIKeys []string
	// Clients are Entra app registrations: client id → client secret.
	Clients map[string]string
	// ServiceAccounts are Google service accounts: client_email → public key.
	ServiceAccounts map[string]*rsa.PublicKey
	// TokenLifetime is how long an issued token lasts; 0 is an hour.
	TokenLifetime time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// NewCloud returns the cloud faces in front of inner.
func NewCloud(inner *Server, opts CloudOptions) *Cloud {
	if opts.TokenLifetime <= 0 {
		opts.TokenLifetime = time.Hour
	}
	c := &Cloud{inner: inner, opts: opts, now: opts.Now, tokens: map[string]time.Time{}}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// TokensIssued is how many tokens the token endpoints have issued.
func (c *Cloud) TokensIssued() int64 { return c.issued.Load() }

// ServeHTTP implements http.Handler.
func (c *Cloud) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/oauth/entra/") && strings.HasSuffix(p, "/oauth2/v2.0/token"):
		c.entraToken(w, r)
	case p == "/oauth/google/token":
		c.googleToken(w, r)
	case strings.HasPrefix(p, "/openai/"):
		c.azure(w, r)
	case strings.HasPrefix(p, "/v1/projects/"), strings.HasPrefix(p, "/v1beta1/projects/"):
		c.vertex(w, r)
	case strings.HasPrefix(p, "/compat/"):
		c.compat(w, r)
	default:
		http.NotFound(w, r)
	}
}

// issue mints a token and answers the grant with it.
func (c *Cloud) issue(w http.ResponseWriter) {
	n := c.issued.Add(1)
	tok := "mock-at-" + strconv.FormatInt(n, 10) + "-" + strconv.FormatInt(c.now().UnixNano(), 36)
	c.mu.Lock()
	c.tokens[tok] = c.now().Add(c.opts.TokenLifetime)
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"access_token": tok, "token_type": "Bearer", "expires_in": int(c.opts.TokenLifetime.Seconds()),
	})
}

// validToken reports whether an Authorization header carries a token this
// Cloud issued that has not expired.
func (c *Cloud) validToken(h http.Header) bool {
	tok, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	c.mu.Lock()
	exp, ok := c.tokens[tok]
	c.mu.Unlock()
	return ok && c.now().Before(exp)
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}

// entraToken is Entra ID's v2.0 token endpoint, client credentials only.
func (c *Cloud) entraToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.ParseForm() != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "AADSTS900144: The request body must contain the following parameter: 'grant_type'.")
		return
	}
	f := r.PostForm
	switch {
	case f.Get("grant_type") != "client_credentials":
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "AADSTS70003: The app requested an unsupported grant type.")
	case f.Get("scope") == "":
		oauthError(w, http.StatusBadRequest, "invalid_request", "AADSTS900144: The request body must contain the following parameter: 'scope'.")
	case c.opts.Clients[f.Get("client_id")] == "" || c.opts.Clients[f.Get("client_id")] != f.Get("client_secret"):
		oauthError(w, http.StatusUnauthorized, "invalid_client", "AADSTS7000215: Invalid client secret provided.")
	default:
		c.issue(w)
	}
}

// googleToken is Google's token endpoint, JWT bearer grant only.
func (c *Cloud) googleToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.ParseForm() != nil || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "Invalid grant_type.")
		return
	}
	parts := strings.Split(r.PostForm.Get("assertion"), ".")
	if len(parts) != 3 {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "Invalid JWT.")
		return
	}
	var head struct{ Alg string }
	var claims struct {
		Iss, Aud, Scope string
		Iat, Exp        int64
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	cb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || json.Unmarshal(hb, &head) != nil || json.Unmarshal(cb, &claims) != nil || head.Alg != "RS256" {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "Invalid JWT.")
		return
	}
	pub := c.opts.ServiceAccounts[claims.Iss]
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	now := c.now().Unix()
	switch {
	case pub == nil || rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig) != nil:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "Invalid JWT Signature.")
	case claims.Aud != "http://"+r.Host+r.URL.Path && claims.Aud != "https://"+r.Host+r.URL.Path:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.")
	case claims.Exp <= now || claims.Iat > now+60 || claims.Exp-claims.Iat > 3600:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.")
	case claims.Scope == "":
		oauthError(w, http.StatusBadRequest, "invalid_scope", "Invalid OAuth scope or ID token audience provided.")
	default:
		c.issue(w)
	}
}
