package profile

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/relay-llm/relay/internal/egress"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/upstream"
	"github.com/relay-llm/relay/internal/wire"
)

// Authorizer sets one upstream call's credential from a host key: a
// header, a token it minted from the key's secret (cached per host key,
// never per request), or a signature over the request and its body. It
// must not log or return the secret, and must be safe for concurrent use.
type Authorizer interface {
	Authorize(ctx context.Context, req *http.Request, body []byte, c Credential) error
}

// Credential is what an Authorizer works from.
type Credential struct {
	Host *snapshot.Host
	Key  *snapshot.HostKey
}

// Params is the host's profile parameters.
func (c Credential) Params() map[string]string { return c.Host.ProfileParams }

// CredentialError is a credential an Authorizer could not produce.
// Refused: the secret itself is bad (a malformed service-account JSON, a
// token endpoint's invalid_client) and the host key is to be held; else
// the token endpoint failed (unreachable, 5xx), a failure like the host's.
// Reason is short and secret-free.
type CredentialError struct {
	Reason  string
	Refused bool
}

func (e *CredentialError) Error() string { return "credential: " + e.Reason }

// Config is what Authorizers need.
type Config struct {
	// Transport carries token requests (Entra, Google): the proxy's
	// upstream transport, so a token endpoint is dialed under the same
	// egress guard as a host; nil is upstream.NewGuardedTransport(Egress).
	// Redirects are not followed: a token endpoint answers itself.
	Transport upstream.Client
	// TokenTimeout bounds one token request; 0 is 30 s.
	TokenTimeout time.Duration
	// Now is the clock; nil is time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// Egress vets a token endpoint that comes from a secret (a service
	// account's token_uri), which the control API never sees in the clear,
	// before Relay posts a signed assertion there; nil allows any but the
	// metadata addresses, as egress.New(nil).
	Egress *egress.Guard
	// Resolve looks a token endpoint's name up for that check; nil is the
	// system resolver.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
}

// Authorizers holds one Authorizer per Auth that needs more than a header,
// with the token caches of those that mint tokens. One per process.
type Authorizers struct {
	by map[Auth]Authorizer
}

// NewAuthorizers returns the process's Authorizers.
func NewAuthorizers(cfg Config) *Authorizers {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Egress == nil {
		cfg.Egress, _ = egress.New(nil) // an empty list cannot fail
	}
	if cfg.Transport == nil {
		cfg.Transport = upstream.NewGuardedTransport(cfg.Egress)
	}
	if cfg.TokenTimeout <= 0 {
		cfg.TokenTimeout = defaultTokenTimeout
	}
	if cfg.Resolve == nil {
		cfg.Resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	return &Authorizers{by: map[Auth]Authorizer{
		AuthEntra:  newEntra(cfg),
		AuthGoogle: newGoogle(cfg),
		AuthSigV4:  newSigV4(cfg),
	}}
}

// Authorize sets the credential of a call through a binding of shape to
// host with key; p is the host's profile (nil: the plain public API).
func (a *Authorizers) Authorize(ctx context.Context, req *http.Request, body []byte, p *Profile, shape wire.Shape, host *snapshot.Host, key *snapshot.HostKey) error {
	auth := AuthShape
	if p != nil {
		auth = p.AuthFor(host.ProfileParams)
	}
	h := req.Header
	switch auth {
	case AuthShape:
		SetShapeAuth(h, shape, key.Secret)
	case AuthBearer:
		if !key.Secret.Empty() {
			h.Set("Authorization", "Bearer "+key.Secret.Reveal())
		}
	case AuthAPIKey:
		h.Set("Api-Key", key.Secret.Reveal())
	case AuthNone:
	default:
		z := a.by[auth]
		if z == nil {
			return &CredentialError{Reason: "no authorizer for " + string(auth), Refused: true}
		}
		if err := z.Authorize(ctx, req, body, Credential{Host: host, Key: key}); err != nil {
			return err
		}
	}
	if shape == wire.ShapeAnthropic && p == nil && h.Get("Anthropic-Version") == "" {
		h.Set("Anthropic-Version", DefaultAnthropicVersion)
	}
	return nil
}

// DefaultAnthropicVersion is the anthropic-version header Relay sends to
// Anthropic's own API when the caller sent none.
const DefaultAnthropicVersion = "2023-06-01"

// SetShapeAuth presents secret as the public API of shape expects it.
func SetShapeAuth(h http.Header, shape wire.Shape, secret snapshot.Secret) {
	switch shape {
	case wire.ShapeAnthropic:
		h.Set("X-Api-Key", secret.Reveal())
	case wire.ShapeGemini:
		h.Set("X-Goog-Api-Key", secret.Reveal())
	default:
		h.Set("Authorization", "Bearer "+secret.Reveal())
	}
}
