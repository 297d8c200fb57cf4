package proxy_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Secrets of the cloud hosts.
const (
	azureAPIKey       = "azure-api-key-0123456789abcdef"
	entraClientSecret = "entra-client-secret-Q8~0123456789"
)

// cloudFixture is the fixture with the mock's cloud faces (Azure OpenAI,
// Vertex AI and their token endpoints) on their own server, sharing the
// fixture's clock.
type cloudFixture struct {
	*fixture
	cloud *mockupstream.Cloud
	url   string
	saKey *rsa.PrivateKey
	saPEM string
}

const saEmail = "relay@proj-1.iam.gserviceaccount.com"

func newCloudFixture(t *testing.T) *cloudFixture {
	t.Helper()
	f := newFixture(t)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	cloud := mockupstream.NewCloud(f.mock, mockupstream.CloudOptions{
		APIKeys:         []string{azureAPIKey},
		Clients:         map[string]string{"app-1": entraClientSecret},
		ServiceAccounts: map[string]*rsa.PublicKey{saEmail: &key.PublicKey},
		Now:             f.clock.Now,
	})
	srv := httptest.NewServer(cloud)
	t.Cleanup(srv.Close)
	// The private key's body must never show either.
	f.secrets = append(f.secrets, strings.Split(strings.TrimSpace(pemKey), "\n")[1])
	return &cloudFixture{fixture: f, cloud: cloud, url: srv.URL, saKey: key, saPEM: pemKey}
}

func (c *cloudFixture) azureHost(slug string, params map[string]string) *snapshot.Host {
	return c.host(slug, func(h *snapshot.Host) {
		h.BaseURL, h.Profile, h.ProfileParams = c.url+"/openai", "azure_openai", params
	})
}

func (c *cloudFixture) entraParams() map[string]string {
	return map[string]string{"api_version": "2024-10-21", "tenant_id": "contoso", "client_id": "app-1",
		"token_url": c.url + "/oauth/entra/contoso/oauth2/v2.0/token"}
}

func (c *cloudFixture) serviceAccount() string {
	b, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "proj-1", "private_key_id": "k1", "private_key": c.saPEM,
		"client_email": saEmail, "token_uri": c.url + "/oauth/google/token",
	})
	return string(b)
}

func (c *cloudFixture) vertexHost(slug string) *snapshot.Host {
	return c.host(slug, func(h *snapshot.Host) {
		h.BaseURL, h.Profile = c.url+"/v1", "vertex"
		h.ProfileParams = map[string]string{"project": "proj-1", "location": "us-central1"}
	})
}

// chatBody is a Chat request with a tool, streamed or not.
func toolChatBody(model string, stream bool) string {
	b := `{"model":"` + model + `","messages":[{"role":"developer","content":"be brief"},{"role":"user","content":"weather in Paris?"}],` +
		`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`
	if stream {
		b += `,"stream":true`
	}
	return b + `}`
}

func toolMessagesBody(model string, stream bool) string {
	b := `{"model":"` + model + `","max_tokens":64,"messages":[{"role":"user","content":"weather in Paris?"}],` +
		`"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`
	if stream {
		b += `,"stream":true`
	}
	return b + `}`
}

func toolResponsesBody(model string, stream bool) string {
	b := `{"model":"` + model + `","input":"weather in Paris?","tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`
	if stream {
		b += `,"stream":true`
	}
	return b + `}`
}

// wantToolCall checks a 200 answer that calls get_weather.
func wantToolCall(t *testing.T, what string, resp *http.Response, body string) {
	t.Helper()
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "get_weather") {
		t.Errorf("%s: %d %.400s", what, resp.StatusCode, body)
	}
}

// Every inbound shape reaches Azure OpenAI deployments (api-key) and
// Vertex AI (Gemini and Anthropic, a service account's token), streamed
// and not, with tools: the upstream sees its own URL layout, credential
// and body, and the caller its own shape.
func TestProfiles_EveryInboundShapeReachesTheClouds(t *testing.T) {
	t.Parallel()
	c := newCloudFixture(t)
	az := c.azureHost("azure", map[string]string{"api_version": "2024-10-21"})
	c.key(az, "az-1", azureAPIKey)
	vx := c.vertexHost("vertex")
	c.key(vx, "vx-1", c.serviceAccount())
	c.bind(c.model("az-chat", true), az, wire.ShapeOpenAI, "gpt4o-deploy")
	c.bind(c.model("az-resp", true), az, wire.ShapeOpenAIResponses, "o4-deploy")
	c.bind(c.model("vx-gemini", true), vx, wire.ShapeGemini, "gemini-2.0-flash")
	c.bind(c.model("vx-claude", true), vx, wire.ShapeAnthropic, "claude-sonnet-4@20250514")
	c.start()

	for _, model := range []string{"az-chat", "az-resp", "vx-gemini", "vx-claude"} {
		for _, stream := range []bool{false, true} {
			what := func(in string) string {
				if stream {
					return in + " stream → " + model
				}
				return in + " → " + model
			}
			resp, body := c.post("/v1/chat/completions", toolChatBody(model, stream), nil)
			wantToolCall(t, what("chat"), resp, body)
			resp, body = c.post("/v1/messages", toolMessagesBody(model, stream), map[string]string{"Authorization": "", "X-Api-Key": relayKey})
			wantToolCall(t, what("messages"), resp, body)
			resp, body = c.post("/v1/responses", toolResponsesBody(model, stream), nil)
			wantToolCall(t, what("responses"), resp, body)
			method := "generateContent"
			if stream {
				method = "streamGenerateContent?alt=sse"
			}
			resp, body = c.post("/v1beta/models/"+model+":"+method,
				`{"contents":[{"role":"user","parts":[{"text":"weather in Paris?"}]}],"tools":[{"functionDeclarations":[{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]}]}`,
				map[string]string{"Authorization": "", "X-Goog-Api-Key": relayKey})
			wantToolCall(t, what("gemini"), resp, body)
			resp, body = c.post("/v1/generate", `{"model":"`+model+`","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`, nil)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s: %d %.300s", what("generate"), resp.StatusCode, body)
			}
		}
	}
	// The upstream got the deployment as the model, and Claude on Vertex
	// its model from the URL (the face refuses a body model).
	seen := map[string]bool{}
	for _, r := range c.requests() {
		seen[r.Path+" "+r.Model] = true
	}
	for _, want := range []string{"/v1/chat/completions gpt4o-deploy", "/v1/responses o4-deploy", "/v1/messages claude-sonnet-4@20250514"} {
		if !seen[want] {
			t.Errorf("the upstream never saw %q; saw %v", want, seen)
		}
	}
	// One token for the whole run: minted once, cached per host key.
	if n := c.cloud.TokensIssued(); n != 1 {
		t.Errorf("%d tokens issued, want 1", n)
	}

	// The SDK is the judge of the caller's side.
	oc, err := c.openai().Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: "az-chat", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})
	if err != nil || len(oc.Choices) == 0 || !strings.Contains(oc.Choices[0].Message.Content, "Hello") {
		t.Errorf("openai-go through Azure: %v %+v", err, oc)
	}
}

// Entra ID tokens under load: concurrent calls share one token; past
// three quarters of its life one refresh runs while calls keep going; a
// token that expired with no traffic is fetched once on the request path.
// No call fails at a token boundary.
func TestProfiles_EntraTokenOneRefreshPerExpiry(t *testing.T) {
	t.Parallel()
	c := newCloudFixture(t)
	az := c.azureHost("azure", c.entraParams())
	c.key(az, "az-entra", entraClientSecret)
	c.bind(c.model("az-chat", true), az, wire.ShapeOpenAI, "gpt4o-deploy")
	c.start()

	burst := func(what string) {
		t.Helper()
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, body := c.post("/v1/chat/completions", toolChatBody("az-chat", true), nil)
				if resp.StatusCode != http.StatusOK {
					t.Errorf("%s: %d %.300s", what, resp.StatusCode, body)
				}
			}()
		}
		wg.Wait()
	}
	burst("first burst")
	if n := c.cloud.TokensIssued(); n != 1 {
		t.Fatalf("%d tokens for one burst, want 1", n)
	}
	for i := int64(2); i <= 4; i++ {
		c.clock.Advance(56 * time.Minute) // past the refresh point, before the end
		burst("burst at a refresh point")
		poll.Until(t, 10*time.Second, "the background refresh", func() bool { return c.cloud.TokensIssued() == i })
		burst("burst after the refresh")
		if n := c.cloud.TokensIssued(); n != i {
			t.Fatalf("%d tokens after refresh %d, want %d", n, i-1, i)
		}
	}
	c.clock.Advance(3 * time.Hour) // no traffic: the token expired
	burst("burst after expiry")
	if n := c.cloud.TokensIssued(); n != 5 {
		t.Errorf("%d tokens after an expiry, want 5", n)
	}
}

// A credential the token endpoint refuses holds that host key, and the
// next key serves; the refused secret shows nowhere.
func TestProfiles_RefusedCredentialHoldsTheKey(t *testing.T) {
	t.Parallel()
	c := newCloudFixture(t)
	az := c.azureHost("azure", c.entraParams())
	c.key(az, "az-bad", "entra-wrong-secret-0123456789")
	c.key(az, "az-good", entraClientSecret)
	c.bind(c.model("az-chat", true), az, wire.ShapeOpenAI, "gpt4o-deploy")
	c.start()

	for range 3 {
		resp, body := c.post("/v1/chat/completions", toolChatBody("az-chat", false), nil)
		wantToolCall(t, "with a refused key first", resp, body)
	}
	// The bad key was tried once: held after its refusal, never fetched again.
	if n := c.cloud.TokensIssued(); n != 1 {
		t.Errorf("%d tokens issued, want 1 (the good key's)", n)
	}
	if !strings.Contains(c.logs.String(), "invalid_client") {
		t.Errorf("the log does not say why the key failed:\n%s", c.logs.String())
	}
}

// An api-key Azure host with a wrong key: Azure's 401 holds the key and
// the caller gets Relay's error in its shape, never the key.
func TestProfiles_AzureRefusedAPIKeyHoldsTheKey(t *testing.T) {
	t.Parallel()
	c := newCloudFixture(t)
	az := c.azureHost("azure", map[string]string{"api_version": "2024-10-21"})
	c.key(az, "az-wrong", "azure-wrong-key-0123456789abcdef")
	c.bind(c.model("az-chat", true), az, wire.ShapeOpenAI, "gpt4o-deploy")
	c.start()
	resp, body := c.post("/v1/chat/completions", toolChatBody("az-chat", false), nil)
	if resp.StatusCode < 400 || decodeError(t, body).Error.Message == "" {
		t.Fatalf("a refused key answered %d %s", resp.StatusCode, body)
	}
	// Held: the next request finds no usable key instead of trying it.
	resp, body = c.post("/v1/chat/completions", toolChatBody("az-chat", false), nil)
	if resp.StatusCode < 400 || !strings.Contains(body, "No host key is available") {
		t.Errorf("the refused key was not held: %d %s", resp.StatusCode, body)
	}
}

// Each OpenAI-compatible profile fits OpenAI's chat request to its
// server: a stream with the developer role and max_completion_tokens is
// served, where the server unprofiled refuses it.
func TestProfiles_CompatServersGetWhatTheyAccept(t *testing.T) {
	t.Parallel()
	c := newCloudFixture(t)
	servers := []string{"vllm", "ollama", "lmstudio", "llamacpp", "groq", "mistral", "deepseek", "together", "fireworks", "openrouter"}
	for _, s := range servers {
		for _, prof := range []string{s, ""} {
			slug := s + "-" + map[bool]string{true: "plain", false: "profiled"}[prof == ""]
			h := c.host(slug, func(h *snapshot.Host) { h.BaseURL, h.Profile = c.url+"/compat/"+s+"/v1", prof })
			c.key(h, slug+"-k", "sk-compat-"+slug+"-0123456789")
			c.bind(c.model(slug, true), h, wire.ShapeOpenAI, "llama-3.1-8b")
		}
	}
	c.start()
	body := func(model string) string {
		return `{"model":"` + model + `","stream":true,"max_completion_tokens":32,"messages":[{"role":"developer","content":"be brief"},{"role":"user","content":"hi"}]}`
	}
	for _, s := range servers {
		resp, got := c.post("/v1/chat/completions", body(s+"-profiled"), nil)
		if resp.StatusCode != http.StatusOK || !strings.Contains(got, "[DONE]") {
			t.Errorf("%s profiled: %d %.300s", s, resp.StatusCode, got)
		}
		if s == "vllm" {
			continue // vLLM takes OpenAI's request as it is
		}
		if resp, _ := c.post("/v1/chat/completions", body(s+"-plain"), nil); resp.StatusCode < 400 {
			t.Errorf("%s without its profile answered %d: the face does not hold the quirk", s, resp.StatusCode)
		}
	}
}

// Throttling on a deployment holds that model on the key, not the key: the
// key's other deployment keeps serving.
func TestProfiles_AzureThrottlingHoldsTheModel(t *testing.T) {
	t.Parallel()
	c := newCloudFixture(t)
	az := c.azureHost("azure", map[string]string{"api_version": "2024-10-21"})
	c.key(az, "az-1", azureAPIKey)
	c.bind(c.model("az-busy", true), az, wire.ShapeOpenAI, "busy-deploy")
	c.bind(c.model("az-calm", true), az, wire.ShapeOpenAI, "calm-deploy")
	c.start()
	resp, body := c.post("/v1/chat/completions", toolChatBody("az-busy", false), map[string]string{testFault: "429-30"})
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a throttled deployment answered %d %s", resp.StatusCode, body)
	}
	if resp, body := c.post("/v1/chat/completions", toolChatBody("az-calm", false), nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the key's other deployment answered %d %s: throttling held the key", resp.StatusCode, body)
	}
	if resp, _ := c.post("/v1/chat/completions", toolChatBody("az-busy", false), nil); resp.StatusCode == http.StatusOK {
		t.Errorf("the throttled deployment was not held")
	}
}

// Google service-account tokens under load, as Entra's: concurrent calls
// through Vertex share one token; past its refresh point one refresh runs
// in the background while the calls keep going on the old token; a token
// that expired with no traffic is fetched once, the calls waiting for that
// one fetch. No call fails at a token boundary, and the mock's token
// endpoint verifies every assertion (signature, aud, iat/exp) on the
// shared clock.
func TestProfiles_GoogleTokenOneRefreshPerExpiry(t *testing.T) {
	t.Parallel()
	c := newCloudFixture(t)
	vx := c.vertexHost("vertex")
	c.key(vx, "vx-1", c.serviceAccount())
	c.bind(c.model("vx-gemini", true), vx, wire.ShapeGemini, "gemini-2.0-flash")
	c.bind(c.model("vx-claude", true), vx, wire.ShapeAnthropic, "claude-sonnet-4@20250514")
	c.start()

	burst := func(what string) {
		t.Helper()
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				model := []string{"vx-gemini", "vx-claude"}[i%2]
				resp, body := c.post("/v1/chat/completions", toolChatBody(model, i%4 < 2), nil)
				if resp.StatusCode != http.StatusOK {
					t.Errorf("%s: %d %.300s", what, resp.StatusCode, body)
				}
			}()
		}
		wg.Wait()
	}
	burst("first burst")
	if n := c.cloud.TokensIssued(); n != 1 {
		t.Fatalf("%d tokens for one burst, want 1", n)
	}
	for i := int64(2); i <= 4; i++ {
		c.clock.Advance(56 * time.Minute) // past the refresh point, before the end
		burst("burst at a refresh point")
		poll.Until(t, 10*time.Second, "the background refresh", func() bool { return c.cloud.TokensIssued() == i })
		burst("burst after the refresh")
		if n := c.cloud.TokensIssued(); n != i {
			t.Fatalf("%d tokens after refresh %d, want %d", n, i-1, i)
		}
	}
	c.clock.Advance(3 * time.Hour) // no traffic: the token expired
	burst("burst after expiry")
	if n := c.cloud.TokensIssued(); n != 5 {
		t.Errorf("%d tokens after an expiry, want 5", n)
	}
}

// A service account the token endpoint refuses (invalid_grant: its key
// does not match the account's) holds that host key in the key pool — not
// the model: the next key on the same host serves the same model at once,
// the refused key is never fetched for again while held, and neither
// private key shows in a response or the log.
func TestProfiles_GoogleInvalidGrantHoldsTheKey(t *testing.T) {
	t.Parallel()
	c := newCloudFixture(t)
	wrong, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(wrong)
	wrongPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	c.secrets = append(c.secrets, strings.Split(strings.TrimSpace(wrongPEM), "\n")[1])
	badSA, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "proj-1", "private_key_id": "k2", "private_key": wrongPEM,
		"client_email": saEmail, "token_uri": c.url + "/oauth/google/token",
	})
	vx := c.vertexHost("vertex")
	bad := c.key(vx, "vx-bad", string(badSA))
	good := c.key(vx, "vx-good", c.serviceAccount())
	c.bind(c.model("vx-gemini", true), vx, wire.ShapeGemini, "gemini-2.0-flash")
	c.start()

	for i := range 3 {
		resp, body := c.post("/v1/chat/completions", toolChatBody("vx-gemini", i == 1), nil)
		wantToolCall(t, "with a refused service account first", resp, body)
	}
	if n := c.cloud.TokensIssued(); n != 1 {
		t.Errorf("%d tokens issued, want 1 (the good key's)", n)
	}
	var keyHeld bool
	for _, s := range c.h.Breakers().States(c.clock.Now()) {
		switch {
		case s.HostKeyID == bad.ID.String() && s.Model == "":
			keyHeld = true
		case s.Model != "":
			t.Errorf("a model is held: %+v", s)
		case s.HostKeyID == good.ID.String():
			t.Errorf("the good key is held: %+v", s)
		}
	}
	if !keyHeld {
		t.Errorf("the refused key is not held: %+v", c.h.Breakers().States(c.clock.Now()))
	}
	if !strings.Contains(c.logs.String(), "invalid_grant") {
		t.Errorf("the log does not say why the key failed:\n%s", c.logs.String())
	}
}
