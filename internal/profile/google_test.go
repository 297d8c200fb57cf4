package profile

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/egress"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// A service account's own token_uri comes from the sealed secret, which
// the control API never checks: before Relay posts a signed assertion
// there, the egress rule vets it, and a private or metadata address is
// refused with an error that names it. No request leaves.
func TestGoogle_TokenURIGoesThroughTheEgressRule(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	account := func(tokenURI string) snapshot.Secret {
		b, _ := json.Marshal(map[string]string{"type": "service_account", "client_email": "sa@p.iam.gserviceaccount.com",
			"private_key_id": "k1", "private_key": pemKey, "token_uri": tokenURI})
		return snapshot.NewSecret(string(b))
	}
	var posted atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posted.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"ya29.ok","expires_in":3600,"token_type":"Bearer"}`))
	}))
	t.Cleanup(srv.Close)
	// Names resolve here, not through DNS: "evil.example" is the metadata
	// address under another name.
	resolve := func(_ context.Context, host string) ([]netip.Addr, error) {
		if host == "evil.example" {
			return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
		}
		return nil, errors.New("no such host")
	}
	allowOnly, err := egress.New([]string{"oauth2.googleapis.com"})
	if err != nil {
		t.Fatal(err)
	}
	host := &snapshot.Host{Slug: "vertex", Profile: "vertex", ProfileParams: map[string]string{"project": "p", "location": "us-central1"}}
	for _, tc := range []struct {
		name, tokenURI string
		guard          *egress.Guard
		refused        string // what the error names; "" when allowed
	}{
		{"metadata address", "http://169.254.169.254/computeMetadata/v1/token", nil, "169.254.169.254"},
		{"metadata name", "http://metadata.google.internal/token", nil, "metadata.google.internal"},
		{"a name that resolves to metadata", "https://evil.example/token", nil, "evil.example"},
		{"outside the allow-list", srv.URL + "/token", allowOnly, srv.URL},
		{"not http", "file:///etc/passwd", nil, "file:///etc/passwd"},
		{"allowed", srv.URL + "/token", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAuthorizers(Config{Egress: tc.guard, Resolve: resolve})
			before := posted.Load()
			req, _ := http.NewRequest(http.MethodPost, "https://us-central1-aiplatform.googleapis.com/v1/x", nil)
			hk := &snapshot.HostKey{ID: uuid.New(), Slug: "sa", Secret: account(tc.tokenURI)}
			err := a.Authorize(t.Context(), req, nil, Lookup("vertex"), wire.ShapeGemini, host, hk)
			if tc.refused == "" {
				if err != nil || req.Header.Get("Authorization") != "Bearer ya29.ok" {
					t.Fatalf("an allowed token_uri: %v %q", err, req.Header.Get("Authorization"))
				}
				return
			}
			var ce *CredentialError
			if !errors.As(err, &ce) || !ce.Refused || !strings.Contains(ce.Reason, "token_uri") || !strings.Contains(ce.Reason, tc.refused) {
				t.Fatalf("want a refusal naming the token_uri %s, got %v", tc.refused, err)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") || strings.Contains(err.Error(), "ya29") {
				t.Fatalf("the error shows a secret: %v", err)
			}
			if posted.Load() != before {
				t.Fatal("the assertion was posted anyway")
			}
		})
	}
}
