package proxy_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Bedrock through Relay: a bedrock_converse binding serves every inbound
// shape, an anthropic binding on a bedrock host serves Messages through
// InvokeModel; the mock's Bedrock face checks every SigV4 signature and
// frames its streams in AWS event-stream encoding.

const (
	awsKeyID   = "AKIAMOCKRELAYTEST01"
	awsSecret  = "relay/test+secret+access+key+0123456789"
	awsToken   = "relay-test-session-token-0123456789"
	awsRegion  = "eu-west-3"
	awsBadKey  = "AKIAMOCKUNKNOWN00001"
	awsSecret2 = "relay/test+secret+access+key+second+key"
)

// bedrockFixture is a Relay whose hosts are the mock's Bedrock face, on the
// fixture's clock; mod may add hosts before it starts.
func bedrockFixture(t *testing.T, mod func(f *fixture, h *snapshot.Host)) *fixture {
	t.Helper()
	f := newFixture(t)
	f.mock = mockupstream.New(mockupstream.Options{
		FaultHeader: testFault, AWSRegion: awsRegion, AWSClock: f.clock.Now,
		AWS: []mockupstream.AWSCredential{
			{AccessKeyID: awsKeyID, SecretAccessKey: awsSecret, SessionToken: awsToken},
			{AccessKeyID: awsKeyID + "2", SecretAccessKey: awsSecret2},
		},
	})
	f.up = httptest.NewServer(f.mock)
	t.Cleanup(f.up.Close)
	h := f.host("bedrock", func(h *snapshot.Host) {
		h.Profile = "bedrock"
		h.ProfileParams = map[string]string{"region": awsRegion, "access_key_id": awsKeyID}
	})
	f.key(h, "aws-1", `{"secret_access_key":"`+awsSecret+`","session_token":"`+awsToken+`"}`)
	f.secrets = append(f.secrets, awsSecret, awsToken)
	f.bind(f.model("nova", true), h, wire.ShapeBedrockConverse, "amazon.nova-pro-v1:0-cached-cache-write")
	f.bind(f.model("claude-bedrock", true), h, wire.ShapeAnthropic, "anthropic.claude-sonnet-4-20250514-v1:0")
	if mod != nil {
		mod(f, h)
	}
	for _, m := range f.data.Models {
		m.MaxOutputTokens = 8192
	}
	f.start()
	return f
}

func TestBedrock_ChatThroughConverse(t *testing.T) {
	t.Parallel()
	f := bedrockFixture(t, nil)
	c := f.openai()
	ctx := t.Context()
	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
		Name: "get_weather", Parameters: openai.FunctionParameters(weatherSchema("city")),
	})}
	resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "nova", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")}, Tools: tools,
	})
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Choices[0].Message.ToolCalls
	if len(calls) != 1 || resp.Choices[0].FinishReason != "tool_calls" || resp.Usage.PromptTokens == 0 || resp.Usage.PromptTokensDetails.CachedTokens == 0 {
		t.Fatalf("%+v", resp)
	}
	rec := f.rec.next(t)
	if rec.Usage.CacheRead == 0 || rec.Usage.CacheWrite == 0 || rec.Usage.Input < rec.Usage.CacheRead+rec.Usage.CacheWrite {
		t.Errorf("usage to the ledger %+v", rec.Usage)
	}
	// The second turn sends the call and its result back; streamed.
	st := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: "nova", Tools: tools,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage("Weather in Paris?"), resp.Choices[0].Message.ToParam(), openai.ToolMessage(`{"temp":21}`, calls[0].ID),
		},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(acc.Choices[0].Message.Content, "The tool returned") || acc.Usage.TotalTokens == 0 {
		t.Fatalf("%+v", acc.ChatCompletion)
	}
	r := f.waitFor(func(r mockupstream.Request) bool { return r.Shape == mockupstream.ShapeBedrockConverse && r.Stream })
	if r.Path != "/model/amazon.nova-pro-v1:0-cached-cache-write/converse-stream" && !strings.HasSuffix(r.Path, "/converse-stream") {
		t.Errorf("path %s", r.Path)
	}
	if !strings.Contains(string(r.Body), `"toolUseId":"`+strings.TrimPrefix(calls[0].ID, "call_")+`"`) {
		t.Errorf("the call id did not come back as its toolUseId: %s", r.Body)
	}
}

func TestBedrock_EveryShapeThroughConverse(t *testing.T) {
	t.Parallel()
	f := bedrockFixture(t, nil)
	for _, tc := range []struct {
		name, path, body string
		want             string
	}{
		{"messages", "/v1/messages", `{"model":"nova","max_tokens":200,"messages":[{"role":"user","content":"Hello there"}]}`, `"type":"message"`},
		{"messages stream", "/v1/messages", `{"model":"nova","max_tokens":200,"stream":true,"messages":[{"role":"user","content":"Hello there"}]}`, "event: message_stop"},
		{"claude code", "/v1/messages", claudeCodeBody("nova"), `"name":"Bash"`},
		{"responses", "/v1/responses", `{"model":"nova","store":false,"input":"Hello there"}`, `"status":"completed"`},
		{"responses stream", "/v1/responses", `{"model":"nova","store":false,"stream":true,"input":"Hello there"}`, "event: response.completed"},
		{"generate", "/v1/generate", `{"model":"nova","messages":[{"role":"user","content":"Hello there"}]}`, `"finish_reason":"stop"`},
		{"generate stream", "/v1/generate", `{"model":"nova","stream":true,"messages":[{"role":"user","content":"Hello there"}]}`, "Hello"},
		{"gemini", "/v1beta/models/nova:generateContent", `{"contents":[{"role":"user","parts":[{"text":"Hello there"}]}]}`, `"finishReason":"STOP"`},
		{"gemini stream", "/v1beta/models/nova:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"Hello there"}]}]}`, `"finishReason":"STOP"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{}
			if strings.HasPrefix(tc.path, "/v1/messages") {
				hdr = claudeCodeHeaders
			}
			resp, body := f.post(tc.path, tc.body, hdr)
			if resp.StatusCode != 200 || !strings.Contains(body, tc.want) || !strings.Contains(body, "amazon.nova-pro-v1:0-cached-cache-write") && tc.name != "claude code" {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
		})
	}
}

// Claude on Bedrock through InvokeModel: the Messages caller's request
// arrives at /model/{id}/invoke with anthropic_version in the body and no
// model, and the stream's chunks pass back as Anthropic's own events.
func TestBedrock_MessagesThroughInvokeModel(t *testing.T) {
	t.Parallel()
	f := bedrockFixture(t, nil)
	c := f.anthropic()
	ctx := t.Context()
	var raw *http.Response
	msg, err := c.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-bedrock", MaxTokens: 100, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello there"))}},
		option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != "end_turn" || msg.Usage.InputTokens == 0 {
		t.Fatalf("%+v", msg)
	}
	// Bedrock's request id reaches the caller: it is what AWS support asks for.
	if raw.Header.Get("X-Amzn-Requestid") == "" {
		t.Fatalf("no x-amzn-RequestId in %v", raw.Header)
	}
	r := f.waitFor(func(r mockupstream.Request) bool { return r.Shape == mockupstream.ShapeBedrockInvoke && !r.Stream })
	var body map[string]json.RawMessage
	_ = json.Unmarshal(r.Body, &body)
	if string(body["anthropic_version"]) != `"bedrock-2023-05-31"` || body["model"] != nil || r.Header.Get("X-Api-Key") != "" {
		t.Fatalf("%s %v", r.Body, r.Header)
	}
	// Claude Code's betas: InvokeModel reads them from the body, and only
	// the ones Bedrock serves go (it refuses "invalid beta flag").
	st := c.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "claude-bedrock", MaxTokens: 100, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello there"))}},
		option.WithHeader("anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14"), option.WithResponseInto(&raw))
	var acc anthropic.Message
	for st.Next() {
		if err := acc.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.StopReason != "end_turn" || len(acc.Content) == 0 || !strings.Contains(acc.Content[0].Text, "Hello from") {
		t.Fatalf("%+v", acc)
	}
	r = f.waitFor(func(r mockupstream.Request) bool { return r.Shape == mockupstream.ShapeBedrockInvoke && r.Stream })
	body = nil
	_ = json.Unmarshal(r.Body, &body)
	if string(body["anthropic_beta"]) != `["interleaved-thinking-2025-05-14"]` {
		t.Fatalf("anthropic_beta in the InvokeModel body: %s", body["anthropic_beta"])
	}
	// The beta left out is named to the caller.
	if got := raw.Header.Get("X-Relay-Dropped-Fields"); got != "anthropic-beta:claude-code-20250219" {
		t.Fatalf("X-Relay-Dropped-Fields %q", got)
	}
}

// An unknown access key holds that key and the next one answers;
// throttling holds the model on its key.
func TestBedrock_CredentialErrorsHoldTheKeyThrottlingTheModel(t *testing.T) {
	t.Parallel()
	f := bedrockFixture(t, func(f *fixture, h *snapshot.Host) {
		bad := f.host("bedrock-bad", func(b *snapshot.Host) {
			b.Profile = "bedrock"
			b.ProfileParams = map[string]string{"region": awsRegion, "access_key_id": awsBadKey}
		})
		f.key(bad, "aws-bad", awsSecret2)
		f.bind(f.model("two-hosts", true), bad, wire.ShapeBedrockConverse, "meta.llama3-70b-instruct-v1:0")
		f.bind(f.data.Models[len(f.data.Models)-1], h, wire.ShapeBedrockConverse, "meta.llama3-70b-instruct-v1:0")
	})
	resp, body := f.post("/v1/chat/completions", `{"model":"two-hosts","messages":[{"role":"user","content":"hi"}]}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	refused := f.waitFor(func(r mockupstream.Request) bool { return r.Status == 403 })
	if !strings.Contains(refused.Header.Get("Authorization"), awsBadKey) {
		t.Fatalf("%v", refused.Header)
	}
	// The refused key is held: the next request goes straight to the good one.
	if resp, body = f.post("/v1/chat/completions", `{"model":"two-hosts","messages":[{"role":"user","content":"hi"}]}`, nil); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	count := func(match func(mockupstream.Request) bool) int {
		n := 0
		for _, r := range f.requests() {
			if match(r) {
				n++
			}
		}
		return n
	}
	if n := count(func(r mockupstream.Request) bool { return r.Status == 403 }); n != 1 {
		t.Fatalf("the unknown access key was tried %d times", n)
	}
	// Throttled on the only host: 429 in the caller's shape, and the model
	// is held on its key: the next call for it does not reach Bedrock,
	// while another model on the same key still does.
	nova := func(r mockupstream.Request) bool { return strings.Contains(r.Path, "nova") }
	resp, body = f.post("/v1/chat/completions", `{"model":"nova","messages":[{"role":"user","content":"hi"}]}`, map[string]string{testFault: "429-7"})
	if resp.StatusCode != 429 || !strings.Contains(body, "rate_limit") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	before := count(nova)
	if resp, _ = f.post("/v1/chat/completions", `{"model":"nova","messages":[{"role":"user","content":"hi"}]}`, nil); resp.StatusCode == 200 || count(nova) != before {
		t.Fatalf("a throttled model was called again at once: %d", resp.StatusCode)
	}
	if resp, body = f.post("/v1/messages", `{"model":"claude-bedrock","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`, nil); resp.StatusCode != 200 {
		t.Fatalf("another model on the key: %d %s", resp.StatusCode, body)
	}
}

// A clock more than five minutes off AWS's is said to be that.
func TestBedrock_ClockSkewIsReportedClearly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.mock = mockupstream.New(mockupstream.Options{AWSRegion: awsRegion, AWSClock: func() time.Time { return epoch.Add(time.Hour) },
		AWS: []mockupstream.AWSCredential{{AccessKeyID: awsKeyID, SecretAccessKey: awsSecret}}})
	f.up = httptest.NewServer(f.mock)
	t.Cleanup(f.up.Close)
	h := f.host("bedrock", func(h *snapshot.Host) {
		h.Profile = "bedrock"
		h.ProfileParams = map[string]string{"region": awsRegion, "access_key_id": awsKeyID}
	})
	f.key(h, "aws-1", awsSecret)
	f.bind(f.model("nova", true), h, wire.ShapeBedrockConverse, "amazon.nova-lite-v1:0")
	f.start()
	resp, body := f.post("/v1/chat/completions", `{"model":"nova","messages":[{"role":"user","content":"hi"}]}`, nil)
	if resp.StatusCode != 502 || !strings.Contains(body, "Relay's clock is more than 5 minutes off AWS's") || !strings.Contains(body, "Signature expired") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}
