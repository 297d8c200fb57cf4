package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// healthcheck asks a running Relay's inference plane whether it is ready
// (GET /readyz) and fails unless it answers 200. It exists for container
// HEALTHCHECKs: the runtime image has no curl.
func healthcheck(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("healthcheck", stderr)
	scheme := "http"
	if envOr(getenv, "RELAY_TLS_CERT_FILE", "") != "" {
		scheme = "https"
	}
	def := scheme + "://" + net.JoinHostPort("127.0.0.1", envOr(getenv, "RELAY_PORT", "8080")) + "/readyz"
	url := fs.String("url", def, "URL to check (default: /readyz on RELAY_PORT)")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for an answer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	// The certificate names the public host, not the loopback address this
	// asks: on the default URL the probe checks readiness, not identity.
	hc := http.DefaultClient
	if *url == def && scheme == "https" {
		hc = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // loopback readiness probe
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %d: %s", *url, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	fmt.Fprintln(stdout, "ready")
	return nil
}

func envOr(getenv func(string) string, name, def string) string {
	if v := strings.TrimSpace(getenv(name)); v != "" {
		return v
	}
	return def
}
