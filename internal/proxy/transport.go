package proxy

import (
	"context"
	"net"
	"net/http"
	"time"
)

// NewTransport returns the HTTP transport Relay shares across every upstream
// request: keep-alives with room for 256 concurrent callers per host, no
// transparent compression (bytes pass through as sent), and a dialer that
// honours each host's connect timeout.
func NewTransport() *http.Transport {
	d := &net.Dialer{KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if t, ok := ctx.Value(connectTimeoutKey).(time.Duration); ok && t > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, t)
				defer cancel()
			}
			return d.DialContext(ctx, network, addr)
		},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
		WriteBufferSize:       32 << 10,
		ReadBufferSize:        32 << 10,
	}
}

type ctxKey uint8

const connectTimeoutKey ctxKey = 1

// withConnectTimeout passes a host's connect timeout to NewTransport's dialer.
func withConnectTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, connectTimeoutKey, d)
}
