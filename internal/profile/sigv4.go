package profile

import (
	"context"
	"net/http"
	"time"

	"github.com/relay-llm/relay/internal/sigv4"
)

// sigv4Authorizer signs Bedrock calls with AWS Signature Version 4: the
// host's access_key_id and region parameters, the host key's secret (the
// secret access key, or {"secret_access_key", "session_token"} JSON for
// temporary credentials). It signs host, Content-Type and the X-Amz
// headers only, so what the proxy sets after it (Accept, traceparent)
// leaves the signature whole. Signing is a few HMACs per call: nothing is
// minted or cached.
type sigv4Authorizer struct {
	now func() time.Time
}

func newSigV4(cfg Config) *sigv4Authorizer { return &sigv4Authorizer{now: cfg.Now} }

// Authorize implements Authorizer.
func (a *sigv4Authorizer) Authorize(_ context.Context, req *http.Request, body []byte, c Credential) error {
	params := c.Params()
	keyID, region := params["access_key_id"], params["region"]
	if keyID == "" || region == "" {
		return &CredentialError{Reason: "the host has no access_key_id or region parameter", Refused: true}
	}
	secret, token, err := sigv4.ParseSecret(c.Key.Secret.Reveal())
	if err != nil {
		return &CredentialError{Reason: "the host key's secret is not an AWS secret access key", Refused: true}
	}
	// The caller's own credentials never go to AWS beside Relay's.
	req.Header.Del("Authorization")
	req.Header.Del("X-Api-Key")
	req.Header.Del("Anthropic-Version")
	sigv4.SignOnly(sigv4.Request{
		Method: req.Method, Host: req.URL.Host, Path: req.URL.EscapedPath(), Query: req.URL.RawQuery,
		Header: req.Header, PayloadHash: sigv4.PayloadHash(body),
	}, sigv4.Credentials{AccessKeyID: keyID, SecretAccessKey: secret, SessionToken: token}, region, "bedrock", a.now(), "Content-Type")
	return nil
}
