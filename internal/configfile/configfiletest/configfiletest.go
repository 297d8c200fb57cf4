// Package configfiletest runs the real control API (internal/controlapi)
// over a database of its own, for the tests of config as code and of the
// CLI subcommands that talk to a control plane. Only tests import it.
package configfiletest

import (
	"bytes"
	"net/http/httptest"
	"testing"

	"github.com/relay-llm/relay/internal/configfile"
	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/secret"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/openapi/client"
)

// AdminToken is the admin bearer of every Server.
const AdminToken = "configfiletest-admin-token-0123456789"

// Server is a control API in an httptest.Server.
type Server struct {
	URL    string
	Store  *store.Store
	Client *client.ClientWithResponses // with the admin token
}

// New starts a control API over a fresh database (pgtest.NewDB), with a
// master key so that literal host key secrets can be sealed. It stops with
// the test.
func New(t testing.TB) *Server {
	t.Helper()
	st, err := store.Open(t.Context(), pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	box, err := secret.NewBox(bytes.Repeat([]byte{7}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	h, err := controlapi.New(controlapi.Config{Store: st, Box: box, AdminToken: AdminToken, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := configfile.NewClient(srv.URL, AdminToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Server{URL: srv.URL, Store: st, Client: c}
}

// AuditRows counts the rows of the audit log: every write of the control API
// adds one, so an unchanged count proves nothing was written.
func (s *Server) AuditRows(t testing.TB) int64 {
	t.Helper()
	var n int64
	if err := s.Store.Pool().QueryRow(t.Context(), "SELECT count(*) FROM audit_log").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
