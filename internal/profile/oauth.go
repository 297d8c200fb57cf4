package profile

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// postToken posts an OAuth2 token request (RFC 6749 §4.4, RFC 7523) and
// reads the token and its lifetime. A 400 or 401 whose error says the
// client or grant is bad refuses the credential (the host key is held);
// anything else is the endpoint's failure. Neither the form nor the
// endpoint's error description reaches the error: they may echo the
// secret.
func postToken(ctx context.Context, client *http.Client, tokenURL string, form url.Values) (string, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, &CredentialError{Reason: "invalid token endpoint URL", Refused: true}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return "", 0, &CredentialError{Reason: "token endpoint timed out"}
		}
		return "", 0, &CredentialError{Reason: "token endpoint unreachable"}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var out struct {
		AccessToken string          `json:"access_token"`
		ExpiresIn   json.RawMessage `json:"expires_in"`
		TokenType   string          `json:"token_type"`
		Error       string          `json:"error"`
	}
	_ = json.Unmarshal(body, &out)
	if resp.StatusCode != http.StatusOK {
		reason := "token endpoint answered " + strconv.Itoa(resp.StatusCode)
		if code := safeCode(out.Error); code != "" {
			reason += " " + code
		}
		refused := resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden
		return "", 0, &CredentialError{Reason: reason, Refused: refused}
	}
	if out.AccessToken == "" {
		return "", 0, &CredentialError{Reason: "token endpoint sent no access_token"}
	}
	// expires_in is a number (Google, RFC 6749) or a string (Entra v1).
	s := strings.Trim(string(out.ExpiresIn), `"`)
	secs, err := strconv.ParseFloat(s, 64)
	if err != nil || secs <= 0 {
		secs = 3600
	}
	return out.AccessToken, time.Duration(secs * float64(time.Second)), nil
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
