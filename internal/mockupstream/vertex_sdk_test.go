package mockupstream_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/vertex"
	"golang.org/x/oauth2/google"

	"github.com/relay-llm/relay/internal/mockupstream"
)

// anthropic-sdk-go's Vertex option (vertex.WithCredentials, a service
// account's JSON key read by golang.org/x/oauth2/google) drives the Vertex
// face: the SDK's JWT bearer grant at the key's token_uri, then Messages
// whole and streamed, which the option rewrites to
// …/publishers/anthropic/models/{m}:rawPredict and :streamRawPredict with
// the model out of the body and the SDK's dated anthropic-version copied
// into anthropic_version — which Vertex accepts, and so does the face.
// A request with a version Vertex does not know is refused in Google's
// error shape.
func TestVertex_AnthropicSDKVertexOption(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	const email = "sdk-claude@proj-1.iam.gserviceaccount.com"
	inner, srv := cloudSetup(t, mockupstream.CloudOptions{ServiceAccounts: map[string]*rsa.PublicKey{email: &key.PublicKey}})
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	sa, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "proj-1", "private_key_id": "k1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": email, "token_uri": srv.URL + "/oauth/google/token",
	})
	creds, err := google.CredentialsFromJSONWithType(ctx(t), sa, google.ServiceAccount, "https://www.googleapis.com/auth/cloud-platform")
	if err != nil {
		t.Fatal(err)
	}
	c := anthropic.NewClient(
		vertex.WithCredentials(ctx(t), "us-central1", "proj-1", creds),
		option.WithBaseURL(srv.URL+"/"), // after the option, which sets Google's
		option.WithMaxRetries(0),
	)
	const model = "claude-sonnet-4@20250514"
	params := anthropic.MessageNewParams{
		Model: model, MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello Vertex"))},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
			Name: "get_weather", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}},
		}}},
	}
	msg, err := c.Messages.New(ctx(t), params)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Model != model || msg.Usage.InputTokens == 0 || len(msg.Content) == 0 {
		t.Fatalf("%+v", msg)
	}
	st := c.Messages.NewStreaming(ctx(t), params)
	var acc anthropic.Message
	for st.Next() {
		if err := acc.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.StopReason == "" || len(acc.Content) == 0 || acc.Usage.OutputTokens == 0 {
		t.Fatalf("stream: %+v", acc)
	}
	var calls int
	for _, r := range inner.Requests() {
		if r.Path == "/v1/messages" && r.Model == model {
			calls++
		}
	}
	if calls != 2 {
		t.Errorf("the face forwarded %d Messages calls for %s, want 2", calls, model)
	}

	// A version Vertex does not take.
	_, err = c.Messages.New(ctx(t), params, option.WithJSONSet("anthropic_version", "bedrock-2023-05-31"))
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.Contains(apiErr.RawJSON(), "INVALID_ARGUMENT") {
		t.Fatalf("an unknown anthropic_version: %v", err)
	}
}
