package metrics

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestRequireToken_GuardsMetricsWhenSet(t *testing.T) {
	const token = "0123456789abcdef-metrics"
	reg := New(Options{})
	for _, tc := range []struct {
		name, token, auth string
		want              int
	}{
		{"off by default", "", "", http.StatusOK},
		{"off ignores a header", "", "Bearer whatever", http.StatusOK},
		{"no header", token, "", http.StatusUnauthorized},
		{"wrong token", token, "Bearer 0123456789abcdef-metricz", http.StatusUnauthorized},
		{"a prefix of it", token, "Bearer 0123456789abcdef", http.StatusUnauthorized},
		{"basic scheme", token, "Basic " + token, http.StatusUnauthorized},
		{"the token", token, "Bearer " + token, http.StatusOK},
		{"scheme in any case", token, "bearer " + token, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			if tc.auth != "" {
				r.Header.Set("Authorization", tc.auth)
			}
			w := httptest.NewRecorder()
			RequireToken(tc.token, reg.Handler()).ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d", w.Code, tc.want)
			}
			if w.Code == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
				t.Error("a 401 without WWW-Authenticate")
			}
		})
	}
}
