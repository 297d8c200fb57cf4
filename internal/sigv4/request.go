package sigv4

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// SignURL signs a request to rawURL with body, as SignOnly does (names
// the headers to sign besides host and the X-Amz ones), reading the host,
// the path as it goes on the wire and the query from the URL.
func SignURL(method, rawURL string, h http.Header, body []byte, c Credentials, region, service string, now time.Time, names ...string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return errors.New("sigv4: the request URL does not parse")
	}
	SignOnly(Request{Method: method, Host: u.Host, Path: u.EscapedPath(), Query: u.RawQuery, Header: h, PayloadHash: PayloadHash(body)}, c, region, service, now, names...)
	return nil
}

// ErrBadSecret is a host key secret that is neither a bare secret access
// key nor the JSON form.
var ErrBadSecret = errors.New("sigv4: the secret is neither a secret access key nor {\"secret_access_key\",\"session_token\"} JSON")

// ParseSecret reads a host key's secret: the bare secret access key, or
// JSON {"secret_access_key": …, "session_token": …} for temporary
// credentials (the access key id is not secret and lives in the host's
// parameters). The error never quotes the secret.
func ParseSecret(secret string) (secretKey, sessionToken string, err error) {
	s := strings.TrimSpace(secret)
	if !strings.HasPrefix(s, "{") {
		if s == "" || strings.ContainsAny(s, " \t\r\n") {
			return "", "", ErrBadSecret
		}
		return s, "", nil
	}
	var v struct {
		SecretAccessKey string `json:"secret_access_key"`
		SessionToken    string `json:"session_token"`
	}
	if json.Unmarshal([]byte(s), &v) != nil || v.SecretAccessKey == "" {
		return "", "", ErrBadSecret
	}
	return v.SecretAccessKey, v.SessionToken, nil
}
