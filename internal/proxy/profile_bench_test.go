package proxy_test

import (
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// BenchmarkProfileAzureVsOpenAI sends the same chat request through a
// plain OpenAI host and an Azure OpenAI deployment host (Entra ID token,
// cached), both served by the same in-process mock, so the difference is
// what the profile costs Relay: the URL layout, the token lookup, the
// header. Run: go test -run '^$' -bench ProfileAzureVsOpenAI -benchtime 3000x ./internal/proxy/
func BenchmarkProfileAzureVsOpenAI(b *testing.B) {
	mock := mockupstream.New(mockupstream.Options{Record: -1})
	up := httptest.NewServer(mock)
	defer up.Close()
	cloud := httptest.NewServer(mockupstream.NewCloud(mock, mockupstream.CloudOptions{Clients: map[string]string{"app": "secret"}}))
	defer cloud.Close()
	id := func(n byte) uuid.UUID { return uuid.UUID{0xbc, n} }
	policy := &snapshot.Policy{ID: id(1), AllModels: true, AllHostKeys: true}
	d := &snapshot.Data{
		Projects:        []*snapshot.Project{{ID: id(2)}},
		ServiceAccounts: []*snapshot.ServiceAccount{{ID: id(3), ProjectID: id(2), PolicyID: policy.ID}},
		Policies:        []*snapshot.Policy{policy},
		RelayKeys:       []*snapshot.RelayKey{{ID: id(4), ProjectID: id(2), ServiceAccountID: id(3), Hash: sha256.Sum256([]byte(relayKey))}},
		Hosts: []*snapshot.Host{
			{ID: id(5), Slug: "openai", BaseURL: up.URL, Enabled: true},
			{ID: id(6), Slug: "azure", BaseURL: up.URL + "/openai", Enabled: true, Profile: "azure_openai", ProfileParams: map[string]string{
				"api_version": "2024-10-21", "tenant_id": "t", "client_id": "app", "token_url": cloud.URL + "/oauth/entra/t/oauth2/v2.0/token"}},
		},
		HostKeys: []*snapshot.HostKey{
			{ID: id(7), HostID: id(5), Slug: "k", Secret: snapshot.NewSecret("sk-up"), SecretVersion: 1, Enabled: true, Usable: true},
			{ID: id(8), HostID: id(6), Slug: "az", Secret: snapshot.NewSecret("secret"), SecretVersion: 1, Enabled: true, Usable: true},
		},
		Models: []*snapshot.Model{{ID: id(9), Name: "gpt-test"}, {ID: id(10), Name: "az-test"}},
		Bindings: []*snapshot.Binding{
			{ID: id(11), ModelID: id(9), HostID: id(5), Shape: wire.ShapeOpenAI, UpstreamModel: "gpt-4o-mini", Enabled: true},
			{ID: id(12), ModelID: id(10), HostID: id(6), Shape: wire.ShapeOpenAI, UpstreamModel: "gpt-4o-mini", Enabled: true},
		},
	}
	snap := snapshot.Build(d, 1, time.Now())
	relay := httptest.NewServer(proxy.New(proxy.Config{Snapshot: func() *snapshot.Snapshot { return snap }}))
	defer relay.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	for _, model := range []string{"gpt-test", "az-test"} {
		body := `{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"hello, benchmark"}]}`
		b.Run(model, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, relay.URL+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+relayKey)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatal(resp.Status)
				}
			}
		})
	}
}
