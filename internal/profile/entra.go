package profile

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/relay-llm/relay/internal/upstream"
)

// Microsoft Entra ID's client-credentials grant: the host key's secret is
// an app registration's client secret, exchanged at the tenant's token
// endpoint for a bearer token (about an hour's), cached per host key.

// Entra defaults.
const (
	entraTokenURL = "https://login.microsoftonline.com/{tenant_id}/oauth2/v2.0/token"
	entraScope    = "https://cognitiveservices.azure.com/.default"
)

type entra struct {
	client upstream.Client
	tokens *tokens
}

func newEntra(cfg Config) *entra {
	return &entra{client: cfg.Transport, tokens: newTokens(cfg, "entra")}
}

// Authorize implements Authorizer.
func (e *entra) Authorize(ctx context.Context, req *http.Request, _ []byte, c Credential) error {
	p := c.Params()
	tokenURL := p["token_url"]
	if tokenURL == "" {
		tokenURL = strings.Replace(entraTokenURL, "{tenant_id}", url.PathEscape(p["tenant_id"]), 1)
	}
	scope := p["scope"]
	if scope == "" {
		scope = entraScope
	}
	k := tokenKey{key: c.Key.ID.String(), version: c.Key.SecretVersion, params: tokenURL + "\x00" + p["client_id"] + "\x00" + scope}
	secret := c.Key.Secret
	tok, err := e.tokens.get(ctx, k, func(ctx context.Context) (string, time.Duration, error) {
		form := url.Values{
			"grant_type":    {"client_credentials"},
			"client_id":     {p["client_id"]},
			"client_secret": {secret.Reveal()},
			"scope":         {scope},
		}
		return postToken(ctx, e.client, tokenURL, form)
	})
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	return nil
}
