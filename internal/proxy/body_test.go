package proxy_test

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// TestProxy_DeclaredLengthIsNotAllocatedUpFront: a caller that declares a
// 32 MiB body and sends a few bytes costs what it sent, not what it
// declared (16 such connections took a pod from 240 MB to 667 MB).
func TestProxy_DeclaredLengthIsNotAllocatedUpFront(t *testing.T) {
	f := newFixture(t)
	f.standard()
	f.start()
	serve := func() int {
		req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(`{"model":"nope","messages":[]}`))
		req.ContentLength = 32 << 20
		req.Header.Set("Authorization", "Bearer "+relayKey)
		w := httptest.NewRecorder()
		f.h.ServeHTTP(w, req)
		return w.Code
	}
	serve() // warm the pools
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	code := serve()
	runtime.ReadMemStats(&after)
	if code != http.StatusNotFound {
		t.Fatalf("status %d, want 404 for the unknown model", code)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 4<<20 {
		t.Fatalf("one request declaring 32 MiB and sending 30 bytes allocated %d bytes", n)
	}
}
