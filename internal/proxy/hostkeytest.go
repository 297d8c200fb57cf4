package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/relay-llm/relay/internal/profile"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/upstream"
	"github.com/relay-llm/relay/internal/wire"
)

// KeyTestResult is one test call with a host key: whether the host accepted
// it, its status (0 when it did not answer) and how long it took. Message
// never contains the secret.
type KeyTestResult struct {
	OK             bool
	UpstreamStatus int
	Latency        time.Duration
	Message        string
}

// ErrUnknownHostKey is returned by TestHostKey for a key the snapshot lacks.
var ErrUnknownHostKey = errors.New("host key not in the snapshot")

// TestHostKey makes one cheap authenticated call — listing models — to the
// key's host in the host's own shape, with the host's connect and first-byte
// timeouts. It does not touch the key's breaker.
func (h *Handler) TestHostKey(ctx context.Context, id snapshot.ID) (KeyTestResult, error) {
	snap := h.snapshot()
	if snap == nil {
		return KeyTestResult{}, ErrUnknownHostKey
	}
	key := snap.HostKey(id)
	if key == nil {
		return KeyTestResult{}, ErrUnknownHostKey
	}
	host := snap.Host(key.HostID)
	if host == nil {
		return KeyTestResult{}, ErrUnknownHostKey
	}
	if !key.Usable {
		return KeyTestResult{Message: "the key's secret cannot be resolved: " + key.Problem}, nil
	}
	shape, path := wire.ShapeOpenAI, "/v1/models"
	switch host.Provider {
	case "anthropic":
		shape = wire.ShapeAnthropic
	case "google":
		shape, path = wire.ShapeGemini, "/v1beta/models"
	}
	timeout := host.FirstByteTimeout
	if timeout <= 0 || timeout > 30*time.Second {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(upstream.Attempt(ctx, host.ConnectTimeout, nil), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, wire.JoinURL(host.BaseURL, path), nil)
	if err != nil {
		return KeyTestResult{Message: "the host's base URL is invalid"}, nil
	}
	if err := h.authorizers.Authorize(ctx, req, nil, profile.Lookup(host.Profile), shape, host, key); err != nil {
		var ce *profile.CredentialError
		if errors.As(err, &ce) {
			return KeyTestResult{Message: "the key could not produce a credential: " + ce.Reason}, nil
		}
		return KeyTestResult{Message: "the key could not produce a credential"}, nil
	}
	start := time.Now()
	resp, err := h.transport.RoundTrip(req)
	lat := time.Since(start)
	if err != nil {
		return KeyTestResult{Latency: lat, Message: "no answer from " + host.Slug + ": " + errorClass(err)}, nil
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // draining for reuse only
	resp.Body.Close()
	r := KeyTestResult{OK: resp.StatusCode < 300, UpstreamStatus: resp.StatusCode, Latency: lat}
	switch {
	case r.OK:
		r.Message = "the host accepted the key"
	case resp.StatusCode == 401 || resp.StatusCode == 403:
		r.Message = "the host refused the key"
	default:
		r.Message = fmt.Sprintf("the host answered %d", resp.StatusCode)
	}
	return r, nil
}

// errorClass names a transport error without echoing URLs or headers.
func errorClass(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "connection failed"
}
