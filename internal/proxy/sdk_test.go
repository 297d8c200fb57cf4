package proxy_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaopt "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/wire"
)

func chatParams(model string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello relay, please answer")},
	}
}

func messageParams(model string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     anthropic.Model(model),
		MaxTokens: 256,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello relay, please answer"))},
	}
}

func TestProxy_ChatCompletion(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	f.start()

	var httpResp *http.Response
	resp, err := f.openai().Chat.Completions.New(t.Context(), chatParams("gpt-test"), oaopt.WithResponseInto(&httpResp))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; !strings.HasPrefix(got, "Hello from gpt-4o-mini") {
		t.Errorf("content %q: the upstream model was not spliced in", got)
	}
	for name, want := range map[string]string{"X-Relay-Host": "openai", "X-Relay-Attempts": "1"} {
		if got := httpResp.Header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if id := httpResp.Header.Get("X-Relay-Request-Id"); !strings.HasPrefix(id, "req_") {
		t.Errorf("X-Relay-Request-ID = %q", id)
	}
	if httpResp.Header.Get("X-Request-Id") == "" {
		t.Error("the upstream's request id was not passed on")
	}

	up := f.requests()
	if len(up) != 1 {
		t.Fatalf("upstream saw %d requests", len(up))
	}
	if got := up[0].Header.Get("Authorization"); got != "Bearer "+openaiSecret {
		t.Errorf("upstream Authorization = %q", got)
	}
	if up[0].Model != "gpt-4o-mini" || up[0].Path != "/v1/chat/completions" {
		t.Errorf("upstream model %q path %q", up[0].Model, up[0].Path)
	}

	rec := f.rec.next(t)
	want := wire.Usage{Input: resp.Usage.PromptTokens, Output: resp.Usage.CompletionTokens}
	if rec.Usage != want || want.Input == 0 || want.Output == 0 {
		t.Errorf("recorded usage %+v, want %+v", rec.Usage, want)
	}
	if rec.Status != 200 || rec.Model != "gpt-test" || rec.HostSlug != "openai" || rec.Attempts != 1 ||
		rec.Inbound != "openai_chat" || rec.Upstream != wire.ShapeOpenAI || rec.Stream || rec.ErrorKind != "" {
		t.Errorf("record %+v", rec)
	}
	if rec.RequestID != httpResp.Header.Get("X-Relay-Request-Id") || rec.PolicyID != f.policy.ID {
		t.Errorf("record ids %+v", rec)
	}

	var line string
	for _, l := range strings.Split(f.logs.String(), "\n") {
		if strings.Contains(l, "request_id="+rec.RequestID) {
			line = l
		}
	}
	for _, want := range []string{"msg=request", "model=gpt-test", "host=openai", "host_key=oa-1", "status=200", "attempts=1", "duration=", `route="openai/openai: kept, 1 keys"`} {
		if !strings.Contains(line, want) {
			t.Errorf("the log line lacks %s: %s", want, line)
		}
	}
}

func TestProxy_ChatStream_UsageChunkOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	f.start()
	client := f.openai()

	t.Run("not asked", func(t *testing.T) {
		stream := client.Chat.Completions.NewStreaming(t.Context(), chatParams("gpt-test"))
		var acc openai.ChatCompletionAccumulator
		chunks := 0
		for stream.Next() {
			chunk := stream.Current()
			if len(chunk.Choices) == 0 {
				t.Errorf("the usage-only chunk reached a caller that did not ask: %s", chunk.RawJSON())
			}
			acc.AddChunk(chunk)
			chunks++
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(acc.Choices[0].Message.Content, "Hello from gpt-4o-mini") || chunks < 3 {
			t.Errorf("accumulated %q in %d chunks", acc.Choices[0].Message.Content, chunks)
		}
		if acc.Usage.TotalTokens != 0 {
			t.Errorf("caller got usage %+v it did not ask for", acc.Usage)
		}
		up := f.waitFor(func(r mockupstream.Request) bool { return r.Stream })
		if !strings.Contains(string(up.Body), `"stream_options":{"include_usage":true}`) {
			t.Errorf("upstream body %s lacks include_usage", up.Body)
		}
		if rec := f.rec.next(t); rec.Usage.Input == 0 || rec.Usage.Output == 0 || !rec.Stream {
			t.Errorf("record %+v: usage not read from the stream", rec)
		}
	})

	t.Run("asked", func(t *testing.T) {
		p := chatParams("gpt-test")
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		stream := client.Chat.Completions.NewStreaming(t.Context(), p)
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if acc.Usage.PromptTokens == 0 || acc.Usage.CompletionTokens == 0 {
			t.Fatalf("caller that asked got no usage: %+v", acc.Usage)
		}
		rec := f.rec.next(t)
		if rec.Usage.Input != acc.Usage.PromptTokens || rec.Usage.Output != acc.Usage.CompletionTokens {
			t.Errorf("recorded %+v, caller saw %+v", rec.Usage, acc.Usage)
		}
	})

	t.Run("raw", func(t *testing.T) {
		_, body := f.post("/v1/chat/completions", `{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"hi"}]}`, nil)
		if strings.Contains(body, `"choices":[]`) || !strings.HasSuffix(body, "data: [DONE]\n\n") {
			t.Errorf("stream body:\n%s", body)
		}
		f.rec.next(t)
	})
}

func TestProxy_Responses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	f.start()
	client := f.openai()
	params := responses.ResponseNewParams{Model: "resp-test", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello relay")}}

	resp, err := client.Responses.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	rec := f.rec.next(t)
	want := wire.Usage{
		Input: resp.Usage.InputTokens, Output: resp.Usage.OutputTokens,
		CacheRead: resp.Usage.InputTokensDetails.CachedTokens, Reasoning: resp.Usage.OutputTokensDetails.ReasoningTokens,
	}
	if rec.Usage != want || want.Reasoning == 0 {
		t.Errorf("non-stream: recorded %+v, response says %+v", rec.Usage, want)
	}

	stream := client.Responses.NewStreaming(t.Context(), params)
	var final responses.ResponseUsage
	var text strings.Builder
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed":
			final = ev.Response.Usage
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text.String(), "Hello from gpt-4o-reasoning") {
		t.Errorf("streamed text %q", text.String())
	}
	rec = f.rec.next(t)
	if rec.Usage.Input != final.InputTokens || rec.Usage.Output != final.OutputTokens || rec.Usage.Reasoning != final.OutputTokensDetails.ReasoningTokens || final.InputTokens == 0 {
		t.Errorf("stream: recorded %+v, completed event says %+v", rec.Usage, final)
	}
	if rec.Inbound != "openai_responses" || rec.Upstream != wire.ShapeOpenAIResponses {
		t.Errorf("record %+v", rec)
	}
}

func TestProxy_Embeddings(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	f.start()
	resp, err := f.openai().Embeddings.New(t.Context(), openai.EmbeddingNewParams{
		Model: "emb-test",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"one", "two"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Data) != 2 || len(resp.Data[0].Embedding) == 0 {
		t.Fatalf("embeddings %+v", resp.Data)
	}
	if up := f.requests(); up[0].Path != "/v1/embeddings" || up[0].Model != "text-embedding-3-small" {
		t.Errorf("upstream %s %s", up[0].Path, up[0].Model)
	}
	if rec := f.rec.next(t); rec.Usage != (wire.Usage{Input: resp.Usage.PromptTokens}) || rec.Usage.Input == 0 {
		t.Errorf("recorded %+v, response %+v", rec.Usage, resp.Usage)
	}
}

func anthropicUsage(u anthropic.Usage) wire.Usage {
	return wire.Usage{
		Input:      u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
		Output:     u.OutputTokens,
		CacheRead:  u.CacheReadInputTokens,
		CacheWrite: u.CacheCreationInputTokens,
	}
}

func TestProxy_AnthropicMessages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	f.start()
	client := f.anthropic()

	var httpResp *http.Response
	msg, err := client.Messages.New(t.Context(), messageParams("claude-test"), anthopt.WithResponseInto(&httpResp))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(msg.Content[0].Text, "Hello from claude-sonnet-cached-cache-write") {
		t.Errorf("content %q", msg.Content[0].Text)
	}
	if httpResp.Header.Get("Request-Id") == "" || httpResp.Header.Get("Anthropic-Ratelimit-Requests-Limit") != "" {
		t.Errorf("provider headers: want the request id, not the shared key's rate-limit state: %v", httpResp.Header)
	}
	up := f.requests()[0]
	if up.Header.Get("X-Api-Key") != anthropicSecret || up.Header.Get("Authorization") != "" || up.Header.Get("Anthropic-Version") == "" {
		t.Errorf("upstream auth headers %v", up.Header)
	}
	rec := f.rec.next(t)
	if want := anthropicUsage(msg.Usage); rec.Usage != want || want.CacheRead == 0 || want.CacheWrite == 0 {
		t.Errorf("non-stream: recorded %+v, want %+v", rec.Usage, want)
	}

	stream := client.Messages.NewStreaming(t.Context(), messageParams("claude-test"))
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Content) == 0 || !strings.HasPrefix(acc.Content[0].Text, "Hello from") {
		t.Errorf("accumulated %+v", acc.Content)
	}
	rec = f.rec.next(t)
	if want := anthropicUsage(acc.Usage); rec.Usage != want || want.Output == 0 {
		t.Errorf("stream: recorded %+v, want %+v", rec.Usage, want)
	}
	if rec.Inbound != "anthropic_messages" || !rec.Stream {
		t.Errorf("record %+v", rec)
	}
}

func TestProxy_PathPrefixes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	f.start()
	if _, err := f.openai(oaopt.WithBaseURL(f.srv.URL+"/openai/v1")).Chat.Completions.New(t.Context(), chatParams("gpt-test")); err != nil {
		t.Errorf("/openai/v1: %v", err)
	}
	if _, err := f.anthropic(anthopt.WithBaseURL(f.srv.URL+"/anthropic")).Messages.New(t.Context(), messageParams("claude-test")); err != nil {
		t.Errorf("/anthropic/v1: %v", err)
	}
}

func TestProxy_ListModels(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	f.model("granted-unbound", true)
	hidden := f.model("not-granted", false)
	f.bind(hidden, f.data.Hosts[0], wire.ShapeOpenAI, "x")
	f.start()
	want := "claude-test,emb-test,gpt-test,resp-test"

	page, err := f.openai().Models.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
		if m.OwnedBy != "test" || m.Created != epoch.Add(-24*time.Hour).Unix() {
			t.Errorf("model %+v", m)
		}
	}
	if strings.Join(ids, ",") != want {
		t.Errorf("OpenAI list %v, want %s", ids, want)
	}

	apage, err := f.anthropic().Models.List(t.Context(), anthropic.ModelListParams{})
	if err != nil {
		t.Fatal(err)
	}
	ids = ids[:0]
	for _, m := range apage.Data {
		ids = append(ids, m.ID)
		if m.DisplayName != m.ID || !m.CreatedAt.Equal(epoch.Add(-24*time.Hour)) {
			t.Errorf("model %+v", m)
		}
	}
	if strings.Join(ids, ",") != want || apage.HasMore || apage.FirstID != "claude-test" || apage.LastID != "resp-test" {
		t.Errorf("Anthropic list %v (first %q last %q)", ids, apage.FirstID, apage.LastID)
	}

	_, body := f.do(http.MethodGet, "/anthropic/v1/models", "", nil)
	if !strings.HasPrefix(body, `{"data":[{"type":"model","id":"claude-test","display_name":"claude-test","created_at":"2026-02-28T09:00:00Z"}`) || !strings.Contains(body, `"has_more":false`) {
		t.Errorf("/anthropic/v1/models: %s", body)
	}

	_, body = f.do(http.MethodGet, "/v1/models", "", map[string]string{"Authorization": "Bearer " + noPolicyKey})
	if body != "{\"object\":\"list\",\"data\":[]}\n" {
		t.Errorf("no policy: %s", body)
	}

	// One model: the same object as in the list; a model the caller may
	// not use is a 404 in its own shape, as an unknown one is.
	m, err := f.openai().Models.Get(t.Context(), "gpt-test")
	if err != nil || m.ID != "gpt-test" || m.OwnedBy != "test" || m.Created != epoch.Add(-24*time.Hour).Unix() {
		t.Errorf("OpenAI model: %+v, %v", m, err)
	}
	am, err := f.anthropic().Models.Get(t.Context(), "claude-test", anthropic.ModelGetParams{})
	if err != nil || am.ID != "claude-test" || !am.CreatedAt.Equal(epoch.Add(-24*time.Hour)) {
		t.Errorf("Anthropic model: %+v, %v", am, err)
	}
	for _, name := range []string{"not-granted", "granted-unbound", "no-such-model"} {
		var oerr *openai.Error
		if _, err := f.openai().Models.Get(t.Context(), name); !errors.As(err, &oerr) || oerr.StatusCode != 404 || oerr.Code != "model_not_found" {
			t.Errorf("OpenAI %s: %v", name, err)
		}
		var aerr *anthropic.Error
		if _, err := f.anthropic().Models.Get(t.Context(), name, anthropic.ModelGetParams{}); !errors.As(err, &aerr) || aerr.StatusCode != 404 {
			t.Errorf("Anthropic %s: %v", name, err)
		}
	}
	if resp, body := f.do(http.MethodPost, "/v1/models/gpt-test", "{}", nil); resp.StatusCode != 405 {
		t.Errorf("POST /v1/models/gpt-test: %d %s", resp.StatusCode, body)
	}
}

var _ proxy.Recorder = (*recorder)(nil)

// TestProxy_AnthropicCountTokens: anthropic-sdk-go's token counting goes
// through to an anthropic binding with the model spliced, costs nothing in
// the ledger, and is refused in Anthropic's shape for a model with no
// anthropic binding.
func TestProxy_AnthropicCountTokens(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	f.start()
	client := f.anthropic()
	params := anthropic.MessageCountTokensParams{
		Model:    anthropic.Model("claude-test"),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello relay, how many tokens is this?"))},
	}
	count, err := client.Messages.CountTokens(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if count.InputTokens <= 0 {
		t.Errorf("input tokens %d", count.InputTokens)
	}
	up := f.requests()[0]
	if up.Path != "/v1/messages/count_tokens" || !strings.Contains(string(up.Body), `"model":"claude-sonnet`) || up.Header.Get("X-Api-Key") != anthropicSecret {
		t.Errorf("upstream request %s %s %v", up.Path, up.Body, up.Header)
	}
	if rec := f.rec.next(t); rec.Inbound != "anthropic_count_tokens" || !rec.Usage.IsZero() || rec.Status != 200 {
		t.Errorf("record %+v", rec)
	}

	params.Model = anthropic.Model("gpt-test")
	var aerr *anthropic.Error
	if _, err := client.Messages.CountTokens(t.Context(), params); !errors.As(err, &aerr) || aerr.StatusCode < 400 || aerr.StatusCode >= 500 {
		t.Errorf("count_tokens for an openai-only model: %v", err)
	} else if !strings.Contains(aerr.RawJSON(), `"type":"error"`) {
		t.Errorf("not an Anthropic error body: %s", aerr.RawJSON())
	}
}
