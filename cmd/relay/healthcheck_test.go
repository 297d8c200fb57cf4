package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestHealthcheck_FollowsReadyz(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusServiceUnavailable)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(int(status.Load()))
		_, _ = w.Write([]byte("draining\n"))
	}))
	defer srv.Close()
	port := srv.Listener.Addr().String()[strings.LastIndexByte(srv.Listener.Addr().String(), ':')+1:]
	getenv := func(k string) string {
		if k == "RELAY_PORT" {
			return port
		}
		return ""
	}
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"healthcheck"}, getenv, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "draining") {
		t.Fatalf("not ready: err = %v, want the 503 and its body", err)
	}
	status.Store(http.StatusOK)
	out.Reset()
	if err := run(context.Background(), []string{"healthcheck"}, getenv, &out, &errb); err != nil {
		t.Fatalf("ready: %v", err)
	}
	if strings.TrimSpace(out.String()) != "ready" {
		t.Fatalf("stdout = %q", out.String())
	}
	if err := run(context.Background(), []string{"healthcheck", "--url", "http://127.0.0.1:1/readyz"}, getenv, &out, &errb); err == nil {
		t.Fatal("nothing listening: want an error")
	}
}

func TestHealthcheck_SpeaksTLSWhenTheListenersDo(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	port := srv.Listener.Addr().String()[strings.LastIndexByte(srv.Listener.Addr().String(), ':')+1:]
	getenv := func(k string) string {
		return map[string]string{"RELAY_PORT": port, "RELAY_TLS_CERT_FILE": "/etc/relay/tls.crt"}[k]
	}
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"healthcheck"}, getenv, &out, &errb); err != nil {
		t.Fatalf("over TLS: %v", err)
	}
}
