package metrics

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// RequireToken guards h (the /metrics handler) with a bearer token
// (RELAY_METRICS_TOKEN): a scrape without it is 401 in the control API's
// error shape. An empty token leaves h open, the default: the control plane
// stays on a private network.
func RequireToken(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) != 1 {
			hd := w.Header()
			hd.Set("WWW-Authenticate", `Bearer realm="relay metrics"`)
			hd.Set("Content-Type", "application/json")
			hd.Set("Cache-Control", "no-store")
			hd.Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"code":"unauthenticated","message":"send the metrics token (RELAY_METRICS_TOKEN) as Authorization: Bearer"}}` + "\n")) // the client may be gone
			return
		}
		h.ServeHTTP(w, r)
	})
}
