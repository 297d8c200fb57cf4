package configfile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/relay-llm/relay/openapi/client"
)

// DefaultURL is where the control plane listens by default.
const DefaultURL = "http://127.0.0.1:8081"

// NewClient returns a generated client for the control plane at baseURL that
// sends token (when not empty) as the admin bearer. hc may be nil.
func NewClient(baseURL, token string, hc *http.Client) (*client.ClientWithResponses, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("control plane URL %q: want http(s)://host:port", baseURL)
	}
	if hc == nil {
		hc = NewHTTPClient()
	}
	opts := []client.ClientOption{client.WithHTTPClient(&errorClient{hc: hc, base: baseURL})}
	if token != "" {
		opts = append(opts, client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+token)
			return nil
		}))
	}
	return client.NewClientWithResponses(strings.TrimRight(baseURL, "/"), opts...)
}

// NewHTTPClient returns the HTTP client NewClient uses by default: a per-call
// timeout, and enough idle connections for apply's parallel writers.
func NewHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 32
	return &http.Client{Transport: t, Timeout: time.Minute}
}

// errorClient turns a transport failure into one line that names the control
// plane, instead of the generated client's "Get \"…/api/hosts?limit=500\": …".
type errorClient struct {
	hc   *http.Client
	base string
}

func (c *errorClient) Do(r *http.Request) (*http.Response, error) {
	resp, err := c.hc.Do(r)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if errors.Is(err, context.Canceled) {
			return nil, err
		}
		return nil, fmt.Errorf("cannot reach the control plane at %s: %w", c.base, err)
	}
	return resp, nil
}

// APIError is an error answer of the control API.
type APIError struct {
	Status  int
	Code    string
	Message string
	Details []models.ErrorDetail
}

func (e *APIError) Error() string {
	switch e.Status {
	case http.StatusUnauthorized:
		return "the control plane refused the credentials (401 " + e.Code + "): set --token or RELAY_ADMIN_TOKEN"
	}
	msg := fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
	if len(e.Details) > 1 {
		var fields []string
		for _, d := range e.Details {
			fields = append(fields, d.Field+": "+d.Message)
		}
		msg += " [" + strings.Join(fields, "; ") + "]"
	}
	return msg
}

// apiError decodes an error answer; a body that is not the API's Error shape
// (a proxy's page) still gives a one-line error.
func apiError(status int, body []byte) error {
	var e models.Error
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code == "" {
		text := strings.TrimSpace(string(body))
		if len(text) > 200 {
			text = text[:200] + "…"
		}
		return &APIError{Status: status, Code: http.StatusText(status), Message: text}
	}
	ae := &APIError{Status: status, Code: e.Error.Code, Message: e.Error.Message}
	if e.Error.Details != nil {
		ae.Details = *e.Error.Details
	}
	return ae
}

// ResponseError is the error of an answer that is not the expected one: the
// API's error, or one line of whatever else answered.
func ResponseError(status int, body []byte) error { return apiError(status, body) }

// IsConflict reports whether err is the API's 409.
func IsConflict(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusConflict
}

// result returns *v, or the API error when the answer was not the expected
// one (v is the typed field of the success status, nil otherwise).
func result[T any](v *T, status int, body []byte) (T, error) {
	if v == nil {
		var zero T
		return zero, apiError(status, body)
	}
	return *v, nil
}

// noContent checks a 204 answer.
func noContent(status int, body []byte) error {
	if status != http.StatusNoContent {
		return apiError(status, body)
	}
	return nil
}

// pageSize is the API's largest page.
const pageSize int32 = 500

// listAll pages through a list endpoint. fetch gets the cursor (nil first)
// and returns the items and the next cursor.
func listAll[T any](fetch func(cursor *string) ([]T, *string, error)) ([]T, error) {
	var all []T
	var cursor *string
	for {
		items, next, err := fetch(cursor)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if next == nil || *next == "" {
			return all, nil
		}
		cursor = next
	}
}

func limit() *int32 { n := pageSize; return &n }
