package mockupstream_test

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
	"net/url"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/auth/credentials"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
	"google.golang.org/genai"

	"github.com/relay-llm/relay/internal/mockupstream"
)

// The cloud faces are held to the official SDKs: what the SDK sends, the
// face accepts, and what the face answers, the SDK reads.

const (
	sdkAzureKey    = "azure-sdk-key-0123456789abcdef"
	sdkEntraClient = "app-sdk"
	sdkEntraSecret = "entra-sdk-secret-0123456789"
)

func cloudSetup(t *testing.T, opts mockupstream.CloudOptions) (*mockupstream.Server, *httptest.Server) {
	t.Helper()
	inner := mockupstream.New(mockupstream.Options{})
	srv := httptest.NewServer(mockupstream.NewCloud(inner, opts))
	t.Cleanup(srv.Close)
	return inner, srv
}

// entraCredential is an azcore.TokenCredential doing the client-credentials
// grant at the mock's Entra endpoint, as azidentity's
// ClientSecretCredential does at login.microsoftonline.com.
type entraCredential struct{ tokenURL string }

func (e entraCredential) GetToken(ctx context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {sdkEntraClient}, "client_secret": {sdkEntraSecret}, "scope": {strings.Join(o.Scopes, " ")}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return azcore.AccessToken{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return azcore.AccessToken{}, err
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		return azcore.AccessToken{}, &url.Error{Op: "token", URL: e.tokenURL, Err: err}
	}
	return azcore.AccessToken{Token: tok.AccessToken, ExpiresOn: time.Now().Add(time.Duration(tok.ExpiresIn) * time.Second)}, nil
}

// openai-go's Azure options (azure.WithEndpoint with its api-version,
// azure.WithAPIKey or azure.WithTokenCredential) drive the Azure face:
// deployment URLs, the api-key header and the Entra bearer token, whole
// and streamed; the SDK reads Azure's content-filter results and a
// completion the output filter cut.
func TestAzure_OpenAIGoAzureOptions(t *testing.T) {
	t.Parallel()
	inner, srv := cloudSetup(t, mockupstream.CloudOptions{
		APIKeys: []string{sdkAzureKey}, Clients: map[string]string{sdkEntraClient: sdkEntraSecret},
	})
	auths := map[string]option.RequestOption{
		"api-key": azure.WithAPIKey(sdkAzureKey),
		"entra":   azure.WithTokenCredential(entraCredential{tokenURL: srv.URL + "/oauth/entra/contoso/oauth2/v2.0/token"}),
	}
	for name, auth := range auths {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := openai.NewClient(azure.WithEndpoint(srv.URL, "2024-10-21"), auth, azure.WithUnsafeAllowHTTP(), option.WithMaxRetries(0))
			params := openai.ChatCompletionNewParams{Model: "gpt4o-" + name, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello Azure")}}
			got, err := c.Chat.Completions.New(ctx(t), params)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Choices) != 1 || !strings.Contains(got.Choices[0].Message.Content, "Hello from gpt4o-"+name) || got.Choices[0].FinishReason != "stop" {
				t.Fatalf("%+v", got)
			}
			if _, ok := got.JSON.ExtraFields["prompt_filter_results"]; !ok {
				t.Errorf("no prompt_filter_results in %s", got.RawJSON())
			}
			if _, ok := got.Choices[0].JSON.ExtraFields["content_filter_results"]; !ok {
				t.Errorf("no content_filter_results in %s", got.RawJSON())
			}
			// The subtests share the mock and run in parallel: look for
			// this one's request, not the last one.
			var seen []string
			found := false
			for _, x := range inner.Requests() {
				seen = append(seen, x.Model)
				found = found || x.Model == "gpt4o-"+name
			}
			if !found {
				t.Errorf("the deployment did not become the model: saw %q", seen)
			}

			// A stream: Azure's prompt-rating chunk first, then the answer.
			st := c.Chat.Completions.NewStreaming(ctx(t), params)
			var acc openai.ChatCompletionAccumulator
			chunks := 0
			for st.Next() {
				acc.AddChunk(st.Current())
				chunks++
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			if len(acc.Choices) != 1 || !strings.Contains(acc.Choices[0].Message.Content, "Hello from") || chunks < 3 {
				t.Fatalf("%d chunks, %+v", chunks, acc.ChatCompletion)
			}

			// The output filter cuts the completion: finish_reason
			// content_filter, whole and streamed.
			params.Model = "gpt4o-completion-filter"
			got, err = c.Chat.Completions.New(ctx(t), params)
			if err != nil {
				t.Fatal(err)
			}
			if got.Choices[0].FinishReason != "content_filter" || got.Choices[0].Message.Content != "" {
				t.Fatalf("a filtered completion: %s", got.RawJSON())
			}
			st = c.Chat.Completions.NewStreaming(ctx(t), params)
			var last string
			for st.Next() {
				if ch := st.Current(); len(ch.Choices) > 0 && ch.Choices[0].FinishReason != "" {
					last = ch.Choices[0].FinishReason
				}
			}
			if err := st.Err(); err != nil || last != "content_filter" {
				t.Fatalf("a filtered stream ended %q: %v", last, err)
			}

			// A prompt the filter catches is Azure's 400 content_filter.
			params.Model = "gpt4o-content-filter"
			_, err = c.Chat.Completions.New(ctx(t), params)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != "content_filter" {
				t.Fatalf("a filtered prompt: %v", err)
			}
		})
	}
	// A wrong key is refused as Azure refuses it.
	c := openai.NewClient(azure.WithEndpoint(srv.URL, "2024-10-21"), azure.WithAPIKey("wrong-key"), azure.WithUnsafeAllowHTTP(), option.WithMaxRetries(0))
	_, err := c.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{Model: "d", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong api-key: %v", err)
	}
}

// google.golang.org/genai's Vertex AI backend, with a service account's
// JSON key read by cloud.google.com/go/auth, drives the Vertex face: the
// SDK's own JWT bearer grant at the key's token_uri (the face verifies
// the RS256 signature), then generateContent and streamGenerateContent
// under /v1beta1/projects/{p}/locations/{l}/publishers/google/models/.
func TestVertex_GenAIVertexBackend(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	const email = "sdk@proj-1.iam.gserviceaccount.com"
	inner, srv := cloudSetup(t, mockupstream.CloudOptions{ServiceAccounts: map[string]*rsa.PublicKey{email: &key.PublicKey}})
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	sa, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "proj-1", "private_key_id": "k1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": email, "token_uri": srv.URL + "/oauth/google/token",
	})
	creds, err := credentials.DetectDefault(&credentials.DetectOptions{CredentialsJSON: sa, Scopes: []string{"https://www.googleapis.com/auth/cloud-platform"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := genai.NewClient(ctx(t), &genai.ClientConfig{
		Backend: genai.BackendVertexAI, Project: "proj-1", Location: "us-central1", Credentials: creds,
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Models.GenerateContent(ctx(t), "gemini-2.0-flash", genai.Text("Hello Vertex"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp.Text(), "Hello from gemini-2.0-flash") || resp.UsageMetadata == nil || resp.Candidates[0].FinishReason != genai.FinishReasonStop {
		t.Fatalf("%+v", resp)
	}
	var text strings.Builder
	for chunk, err := range c.Models.GenerateContentStream(ctx(t), "gemini-2.0-flash", genai.Text("Hello Vertex"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		text.WriteString(chunk.Text())
	}
	if !strings.Contains(text.String(), "Hello from gemini-2.0-flash") {
		t.Fatalf("stream: %q", text.String())
	}
	paths := map[string]bool{}
	for _, r := range inner.Requests() {
		paths[r.Path] = true
	}
	if !paths["/v1beta/models/gemini-2.0-flash:generateContent"] || !paths["/v1beta/models/gemini-2.0-flash:streamGenerateContent"] {
		t.Errorf("the face served %v", paths)
	}
	// A token the face did not issue is refused as Vertex refuses it.
	bad, err := genai.NewClient(ctx(t), &genai.ClientConfig{
		Backend: genai.BackendVertexAI, Project: "proj-1", Location: "us-central1",
		HTTPClient: &http.Client{Transport: bearer{"ya29.not-issued"}}, HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Models.GenerateContent(ctx(t), "gemini-2.0-flash", genai.Text("hi"), nil)
	var apiErr genai.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != http.StatusUnauthorized || apiErr.Status != "UNAUTHENTICATED" {
		t.Fatalf("an unissued token: %v", err)
	}
}

// bearer presents a fixed token, as an http.Client for genai.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
