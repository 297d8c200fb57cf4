package mockupstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthbedrock "github.com/anthropics/anthropic-sdk-go/v2/bedrock"
	anthopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	brtypes "github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
)

var testAWS = AWSCredential{AccessKeyID: "AKIAMOCKEXAMPLE", SecretAccessKey: "mock/secret+key", SessionToken: "mock-session-token"}

func bedrockSetup(t *testing.T, region string) (*Server, *httptest.Server) {
	t.Helper()
	s := New(Options{AWS: []AWSCredential{testAWS}, AWSRegion: "eu-west-3"})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

// bedrockClient is aws-sdk-go-v2's own Bedrock runtime client, pointed at
// the mock: the judge of the face.
func bedrockClient(srv *httptest.Server, region string, cred AWSCredential) *bedrockruntime.Client {
	return bedrockruntime.New(bedrockruntime.Options{
		Region:       region,
		BaseEndpoint: aws.String(srv.URL),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: cred.AccessKeyID, SecretAccessKey: cred.SecretAccessKey, SessionToken: cred.SessionToken}, nil
		}),
		RetryMaxAttempts: 1,
	})
}

func TestBedrock_ConverseWithTheSDK(t *testing.T) {
	t.Parallel()
	s, srv := bedrockSetup(t, "eu-west-3")
	cl := bedrockClient(srv, "eu-west-3", testAWS)
	ctx := context.Background()
	model := "anthropic.claude-3-5-sonnet-20240620-v1:0"
	out, err := cl.Converse(ctx, &bedrockruntime.ConverseInput{
		ModelId:         aws.String(model),
		System:          []brtypes.SystemContentBlock{&brtypes.SystemContentBlockMemberText{Value: "Be brief."}},
		Messages:        []brtypes.Message{{Role: brtypes.ConversationRoleUser, Content: []brtypes.ContentBlock{&brtypes.ContentBlockMemberText{Value: "Hello mock"}}}},
		InferenceConfig: &brtypes.InferenceConfiguration{MaxTokens: aws.Int32(100)},
	})
	if err != nil {
		t.Fatal(err)
	}
	msg := out.Output.(*brtypes.ConverseOutputMemberMessage).Value
	text := msg.Content[0].(*brtypes.ContentBlockMemberText).Value
	if !strings.Contains(text, "Hello from "+model) || out.StopReason != brtypes.StopReasonEndTurn || *out.Usage.InputTokens == 0 || *out.Usage.OutputTokens == 0 {
		t.Fatalf("%q %v %+v", text, out.StopReason, out.Usage)
	}
	r, err := s.WaitFor(ctx, func(r Request) bool { return r.Shape == ShapeBedrockConverse })
	if err != nil || r.Model != model || r.Status != 200 {
		t.Fatalf("%+v %v", r, err)
	}
}

// ConverseStream's event-stream framing, read by the SDK, with a tool call
// whose input streams in fragments.
func TestBedrock_ConverseStreamWithTheSDK(t *testing.T) {
	t.Parallel()
	_, srv := bedrockSetup(t, "eu-west-3")
	cl := bedrockClient(srv, "eu-west-3", testAWS)
	schema := map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}
	out, err := cl.ConverseStream(context.Background(), &bedrockruntime.ConverseStreamInput{
		ModelId:  aws.String("amazon.nova-lite-v1:0"),
		Messages: []brtypes.Message{{Role: brtypes.ConversationRoleUser, Content: []brtypes.ContentBlock{&brtypes.ContentBlockMemberText{Value: "Weather in Paris?"}}}},
		ToolConfig: &brtypes.ToolConfiguration{Tools: []brtypes.Tool{&brtypes.ToolMemberToolSpec{Value: brtypes.ToolSpecification{
			Name: aws.String("get_weather"), InputSchema: &brtypes.ToolInputSchemaMemberJson{Value: docOf(schema)},
		}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	stream := out.GetStream()
	defer stream.Close()
	var kinds []string
	var text, input strings.Builder
	var stop brtypes.StopReason
	var used *brtypes.TokenUsage
	for ev := range stream.Events() {
		switch e := ev.(type) {
		case *brtypes.ConverseStreamOutputMemberMessageStart:
			kinds = append(kinds, "start")
		case *brtypes.ConverseStreamOutputMemberContentBlockStart:
			kinds = append(kinds, "block_start")
			if tu, ok := e.Value.Start.(*brtypes.ContentBlockStartMemberToolUse); !ok || *tu.Value.Name != "get_weather" || !strings.HasPrefix(*tu.Value.ToolUseId, "tooluse_") {
				t.Errorf("block start %+v", e.Value.Start)
			}
		case *brtypes.ConverseStreamOutputMemberContentBlockDelta:
			switch d := e.Value.Delta.(type) {
			case *brtypes.ContentBlockDeltaMemberText:
				text.WriteString(d.Value)
			case *brtypes.ContentBlockDeltaMemberToolUse:
				input.WriteString(*d.Value.Input)
			}
		case *brtypes.ConverseStreamOutputMemberMessageStop:
			stop = e.Value.StopReason
		case *brtypes.ConverseStreamOutputMemberMetadata:
			used = e.Value.Usage
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("%v after %v text %q input %q", err, kinds, text.String(), input.String())
	}
	var args map[string]any
	if stop != brtypes.StopReasonToolUse || json.Unmarshal([]byte(input.String()), &args) != nil || args["city"] == nil || text.Len() == 0 || used == nil || *used.TotalTokens == 0 {
		t.Fatalf("kinds %v stop %v input %q text %q usage %+v", kinds, stop, input.String(), text.String(), used)
	}
}

// Anthropic on Bedrock: an InvokeModel body with anthropic_version, read
// back as Anthropic's JSON; the streamed form in chunk events carrying
// base64 Anthropic SSE event JSON.
func TestBedrock_InvokeModelWithTheSDK(t *testing.T) {
	t.Parallel()
	_, srv := bedrockSetup(t, "eu-west-3")
	cl := bedrockClient(srv, "eu-west-3", testAWS)
	body := []byte(`{"anthropic_version":"bedrock-2023-05-31","anthropic_beta":["context-1m-2025-08-07"],"max_tokens":50,"messages":[{"role":"user","content":"Hi there"}]}`)
	out, err := cl.InvokeModel(context.Background(), &bedrockruntime.InvokeModelInput{ModelId: aws.String("anthropic.claude-sonnet-4-20250514-v1:0"), Body: body, ContentType: aws.String("application/json")})
	if err != nil {
		t.Fatal(err)
	}
	var msg struct {
		Type       string `json:"type"`
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(out.Body, &msg); err != nil || msg.Type != "message" || msg.StopReason != "end_turn" || !strings.Contains(msg.Content[0].Text, "Hi there") {
		t.Fatalf("%s %v", out.Body, err)
	}
	so, err := cl.InvokeModelWithResponseStream(context.Background(), &bedrockruntime.InvokeModelWithResponseStreamInput{ModelId: aws.String("anthropic.claude-sonnet-4-20250514-v1:0"), Body: body})
	if err != nil {
		t.Fatal(err)
	}
	st := so.GetStream()
	defer st.Close()
	var types []string
	for ev := range st.Events() {
		c, ok := ev.(*brtypes.ResponseStreamMemberChunk)
		if !ok {
			t.Fatalf("event %T", ev)
		}
		var e struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(c.Value.Bytes, &e); err != nil {
			t.Fatalf("chunk %q: %v", c.Value.Bytes, err)
		}
		types = append(types, e.Type)
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if len(types) < 5 || types[0] != "message_start" || types[len(types)-1] != "message_stop" {
		t.Fatalf("%v", types)
	}
	// anthropic_version is required; model is not Bedrock's to take.
	_, err = cl.InvokeModel(context.Background(), &bedrockruntime.InvokeModelInput{ModelId: aws.String("anthropic.claude"), Body: []byte(`{"max_tokens":5,"messages":[{"role":"user","content":"x"}]}`)})
	var ve *brtypes.ValidationException
	if !errors.As(err, &ve) || !strings.Contains(ve.ErrorMessage(), "anthropic_version") {
		t.Fatalf("%v", err)
	}
}

// The face refuses what AWS refuses, with AWS's error types and messages.
func TestBedrock_RefusesBadSignatures(t *testing.T) {
	t.Parallel()
	_, srv := bedrockSetup(t, "eu-west-3")
	input := func() *bedrockruntime.ConverseInput {
		return &bedrockruntime.ConverseInput{ModelId: aws.String("m"), Messages: []brtypes.Message{{Role: brtypes.ConversationRoleUser, Content: []brtypes.ContentBlock{&brtypes.ContentBlockMemberText{Value: "hi"}}}}}
	}
	for _, tc := range []struct {
		name   string
		region string
		cred   AWSCredential
		code   string
		msg    string
	}{
		{"wrong region", "us-west-2", testAWS, "InvalidSignatureException", "Credential should be scoped to a valid region."},
		{"wrong secret", "eu-west-3", AWSCredential{AccessKeyID: testAWS.AccessKeyID, SecretAccessKey: "other", SessionToken: testAWS.SessionToken}, "InvalidSignatureException", "signature we calculated does not match"},
		{"unknown key", "eu-west-3", AWSCredential{AccessKeyID: "AKIAOTHER", SecretAccessKey: "x"}, "UnrecognizedClientException", "security token included in the request is invalid"},
		{"missing session token", "eu-west-3", AWSCredential{AccessKeyID: testAWS.AccessKeyID, SecretAccessKey: testAWS.SecretAccessKey}, "UnrecognizedClientException", "security token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bedrockClient(srv, tc.region, tc.cred).Converse(context.Background(), input())
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != tc.code || !strings.Contains(ae.ErrorMessage(), tc.msg) {
				t.Fatalf("%v", err)
			}
		})
	}
}

// A signature made with the wrong service, a stale clock or over another
// body is refused; checked with hand-made requests signed by the SDK's
// signer.
func TestBedrock_RefusesWrongServiceDateAndBody(t *testing.T) {
	t.Parallel()
	_, srv := bedrockSetup(t, "eu-west-3")
	body := []byte(`{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`)
	send := func(service string, at time.Time, signedBody []byte) (int, string, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/model/m%3A0/converse", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		sum := sha256Hex(signedBody)
		creds := aws.Credentials{AccessKeyID: testAWS.AccessKeyID, SecretAccessKey: testAWS.SecretAccessKey, SessionToken: testAWS.SessionToken}
		if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, sum, service, "eu-west-3", at); err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("X-Amzn-Errortype"), string(b)
	}
	now := time.Now()
	if st, _, b := send("bedrock", now, body); st != 200 {
		t.Fatalf("a good signature: %d %s", st, b)
	}
	for _, tc := range []struct {
		name    string
		service string
		at      time.Time
		body    []byte
		want    string
	}{
		{"service", "s3", now, body, "Credential should be scoped to correct service: 'bedrock'."},
		{"clock skew", "bedrock", now.Add(-10 * time.Minute), body, "Signature expired: "},
		{"future", "bedrock", now.Add(10 * time.Minute), body, "Signature not yet current: "},
		{"body hash", "bedrock", now, []byte(`{"other":1}`), "signature we calculated does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, typ, b := send(tc.service, tc.at, tc.body)
			if st != 403 || !strings.HasPrefix(typ, "InvalidSignatureException") || !strings.Contains(b, tc.want) {
				t.Fatalf("%d %s %s", st, typ, b)
			}
		})
	}
}

// Throttling and a mid-stream exception come as Bedrock sends them.
func TestBedrock_FaultsInBedrockShape(t *testing.T) {
	t.Parallel()
	_, srv := bedrockSetup(t, "eu-west-3")
	cl := bedrockClient(srv, "eu-west-3", testAWS)
	msgs := []brtypes.Message{{Role: brtypes.ConversationRoleUser, Content: []brtypes.ContentBlock{&brtypes.ContentBlockMemberText{Value: "hi"}}}}
	_, err := cl.Converse(context.Background(), &bedrockruntime.ConverseInput{ModelId: aws.String("mock-fault-429"), Messages: msgs})
	var te *brtypes.ThrottlingException
	if !errors.As(err, &te) {
		t.Fatalf("%v", err)
	}
	out, err := cl.ConverseStream(context.Background(), &bedrockruntime.ConverseStreamInput{ModelId: aws.String("mock-fault-midstream-2"), Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	st := out.GetStream()
	for range st.Events() {
	}
	var se *brtypes.ServiceUnavailableException
	if err := st.Err(); !errors.As(err, &se) {
		t.Fatalf("stream error %v", err)
	}
	st.Close()
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func docOf(v any) document.Interface { return document.NewLazyDocument(v) }

// anthropic-sdk-go's own Bedrock option (SigV4 signing, betas into the
// body, InvokeModel paths, event-stream chunks back to SSE) is a client of
// the face too.
func TestBedrock_AnthropicSDKBedrockOption(t *testing.T) {
	t.Parallel()
	_, srv := bedrockSetup(t, "eu-west-3")
	cfg := aws.Config{Region: "eu-west-3", Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: testAWS.AccessKeyID, SecretAccessKey: testAWS.SecretAccessKey, SessionToken: testAWS.SessionToken}, nil
	})}
	c := anthropic.NewClient(anthbedrock.WithConfig(cfg), anthopt.WithBaseURL(srv.URL), anthopt.WithMaxRetries(0),
		anthopt.WithHeader("anthropic-beta", "context-1m-2025-08-07"))
	params := anthropic.MessageNewParams{Model: "anthropic.claude-sonnet-4-20250514-v1:0", MaxTokens: 50,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello there"))}}
	msg, err := c.Messages.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != "end_turn" || !strings.Contains(msg.Content[0].Text, "Hello there") {
		t.Fatalf("%+v", msg)
	}
	st := c.Messages.NewStreaming(t.Context(), params)
	var acc anthropic.Message
	for st.Next() {
		if err := acc.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.StopReason != "end_turn" || acc.Usage.OutputTokens == 0 {
		t.Fatalf("%+v", acc)
	}
}
