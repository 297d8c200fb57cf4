package profile

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/relay-llm/relay/internal/egress"
	"github.com/relay-llm/relay/internal/upstream"
)

// maxTokenAnswer bounds a token endpoint's answer: a token answer is a few
// KB; anything past this is not one.
const maxTokenAnswer = 64 << 10

// postToken posts an OAuth2 token request (RFC 6749 §4.4, RFC 7523) and
// reads the token and its lifetime. The request goes through client — the
// proxy's upstream transport, so the egress guard checks every address the
// endpoint's name resolves to at the dial, as it does a host's — and no
// redirect is followed. A 400 or 401 whose error says the client or grant
// is bad refuses the credential (the host key is held), as does an address
// the egress rule refuses; anything else is the endpoint's failure. Neither
// the form, the endpoint's answer nor its error description reaches the
// error: they may echo the secret or carry a token.
func postToken(ctx context.Context, client upstream.Client, tokenURL string, form url.Values) (string, time.Duration, error) {
	u, err := url.Parse(tokenURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", 0, &CredentialError{Reason: "invalid token endpoint URL", Refused: true}
	}
	enc := form.Encode()
	req, err := http.NewRequestWithContext(upstream.Attempt(ctx, 0, nil), http.MethodPost, u.String(), strings.NewReader(enc))
	if err != nil {
		return "", 0, &CredentialError{Reason: "invalid token endpoint URL", Refused: true}
	}
	req.ContentLength = int64(len(enc))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := client.RoundTrip(req)
	if err != nil {
		return "", 0, dialError(ctx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenAnswer+1))
	if err != nil {
		return "", 0, dialError(ctx, err)
	}
	if len(body) > maxTokenAnswer {
		return "", 0, &CredentialError{Reason: "token endpoint's answer is over 64 KiB"}
	}
	var out struct {
		AccessToken string          `json:"access_token"`
		ExpiresIn   json.RawMessage `json:"expires_in"`
		TokenType   string          `json:"token_type"`
		Error       string          `json:"error"`
	}
	jsonErr := json.Unmarshal(body, &out)
	if resp.StatusCode != http.StatusOK {
		reason := "token endpoint answered " + strconv.Itoa(resp.StatusCode)
		if code := safeCode(out.Error); code != "" {
			reason += " " + code
		}
		refused := resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden
		return "", 0, &CredentialError{Reason: reason, Refused: refused}
	}
	if jsonErr != nil {
		return "", 0, &CredentialError{Reason: "token endpoint's answer is not a JSON object"}
	}
	if out.AccessToken == "" {
		return "", 0, &CredentialError{Reason: "token endpoint sent no access_token"}
	}
	// expires_in is a number (Google, RFC 6749) or a string (Entra v1).
	s := strings.Trim(string(out.ExpiresIn), `"`)
	secs, err := strconv.ParseFloat(s, 64)
	if err != nil || secs <= 0 || secs > 7*24*3600 {
		secs = 3600
	}
	return out.AccessToken, time.Duration(secs * float64(time.Second)), nil
}

// dialError names what went wrong reaching a token endpoint by its kind,
// never by the error's text (a URL error quotes the URL, a TLS error the
// certificate's names: harmless, but the kind is what an operator acts on).
func dialError(ctx context.Context, err error) error {
	var cv *tls.CertificateVerificationError
	var ue x509.UnknownAuthorityError
	var he x509.HostnameError
	var ce x509.CertificateInvalidError
	var rh tls.RecordHeaderError
	var ne net.Error
	switch {
	case errors.Is(err, egress.ErrRefused):
		return &CredentialError{Reason: "token endpoint refused by the egress rule (RELAY_UPSTREAM_ALLOW, Relay's own listeners, metadata addresses)", Refused: true}
	case errors.Is(err, context.DeadlineExceeded), ctx.Err() != nil, errors.As(err, &ne) && ne.Timeout():
		return &CredentialError{Reason: "token endpoint timed out"}
	case errors.As(err, &cv), errors.As(err, &ue), errors.As(err, &he), errors.As(err, &ce), errors.As(err, &rh):
		return &CredentialError{Reason: "token endpoint's TLS handshake failed"}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &CredentialError{Reason: "token endpoint refused the connection"}
	}
	return &CredentialError{Reason: "token endpoint unreachable"}
}

// safeCode is an OAuth error code if it looks like one (invalid_client …),
// else "": the code goes into logs, so nothing free-form.
func safeCode(s string) string {
	if len(s) > 40 {
		return ""
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c == '_') {
			return ""
		}
	}
	return s
}
