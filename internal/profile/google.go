package profile

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/relay-llm/relay/internal/egress"
	"github.com/relay-llm/relay/internal/upstream"
)

// Google service accounts: the host key's secret is a service account's
// JSON key; a JWT it signs (RS256) is exchanged at the token endpoint for
// an access token (RFC 7523 JWT bearer grant), cached per host key.

const (
	googleTokenURL = "https://oauth2.googleapis.com/token"
	googleScope    = "https://www.googleapis.com/auth/cloud-platform"
	jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"
)

type google struct {
	client  upstream.Client
	now     func() time.Time
	tokens  *tokens
	egress  *egress.Guard
	resolve func(ctx context.Context, host string) ([]netip.Addr, error)
}

func newGoogle(cfg Config) *google {
	return &google{client: cfg.Transport, now: cfg.Now, tokens: newTokens(cfg, "google"), egress: cfg.Egress, resolve: cfg.Resolve}
}

// serviceAccount is the part of a service account's JSON key Relay reads.
type serviceAccount struct {
	Type         string `json:"type"`
	ClientEmail  string `json:"client_email"`
	PrivateKeyID string `json:"private_key_id"`
	PrivateKey   string `json:"private_key"`
	TokenURI     string `json:"token_uri"`
}

// Authorize implements Authorizer.
func (g *google) Authorize(ctx context.Context, req *http.Request, _ []byte, c Credential) error {
	tokenURL := c.Params()["token_url"]
	k := tokenKey{key: c.Key.ID.String(), version: c.Key.SecretVersion, params: tokenURL}
	secret := c.Key.Secret
	tok, err := g.tokens.get(ctx, k, func(ctx context.Context) (string, time.Duration, error) {
		sa, key, err := parseServiceAccount([]byte(secret.Reveal()))
		if err != nil {
			return "", 0, err
		}
		aud := tokenURL // vetted by the control API when it was written
		if aud == "" && sa.TokenURI != "" {
			// The account's own token endpoint comes from the sealed
			// secret: the egress rule has not seen it yet.
			aud = sa.TokenURI
			if err := g.egress.CheckURL(ctx, aud, g.resolve); err != nil {
				return "", 0, &CredentialError{Reason: fmt.Sprintf("the service account's token_uri %q is refused: %v", aud, err), Refused: true}
			}
		}
		if aud == "" {
			aud = googleTokenURL
		}
		jwt, err := signJWT(key, sa, aud, g.now())
		if err != nil {
			return "", 0, err
		}
		return postToken(ctx, g.client, aud, url.Values{"grant_type": {jwtBearerGrant}, "assertion": {jwt}})
	})
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	return nil
}

// parseServiceAccount reads a service account's JSON key. Its errors name
// what is missing, never a value.
func parseServiceAccount(raw []byte) (serviceAccount, *rsa.PrivateKey, error) {
	var sa serviceAccount
	if json.Unmarshal(raw, &sa) != nil {
		return sa, nil, &CredentialError{Reason: "the host key is not a service account's JSON key", Refused: true}
	}
	if sa.Type != "service_account" || sa.ClientEmail == "" || sa.PrivateKey == "" {
		return sa, nil, &CredentialError{Reason: "the service account JSON lacks type service_account, client_email or private_key", Refused: true}
	}
	block, _ := pem.Decode([]byte(sa.PrivateKey))
	if block == nil {
		return sa, nil, &CredentialError{Reason: "the service account's private_key is not PEM", Refused: true}
	}
	var key *rsa.PrivateKey
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		key, _ = k.(*rsa.PrivateKey)
	} else if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		key = k
	}
	if key == nil {
		return sa, nil, &CredentialError{Reason: "the service account's private_key is not an RSA key", Refused: true}
	}
	return sa, key, nil
}

// signJWT is the grant's assertion: an RS256 JWT for an hour.
func signJWT(key *rsa.PrivateKey, sa serviceAccount, aud string, now time.Time) (string, error) {
	head, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": sa.PrivateKeyID})
	claims, _ := json.Marshal(map[string]any{
		"iss": sa.ClientEmail, "scope": googleScope, "aud": aud,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	})
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString(head) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		return "", &CredentialError{Reason: "could not sign the token request", Refused: true}
	}
	return signing + "." + enc.EncodeToString(sig), nil
}
