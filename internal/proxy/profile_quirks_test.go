package proxy_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Azure's content filter reaches every caller in its own words: a
// completion the output filter cut is Anthropic's refusal, Gemini's
// SAFETY and Responses' incomplete content_filter, whole and streamed;
// a Chat caller gets Azure's own answer, its filter results included.
func TestProfiles_AzureContentFilterInEveryShape(t *testing.T) {
	t.Parallel()
	c := newCloudFixture(t)
	az := c.azureHost("azure", map[string]string{"api_version": "2024-10-21"})
	c.key(az, "az-1", azureAPIKey)
	c.bind(c.model("az-filtered", true), az, wire.ShapeOpenAI, "gpt4o-completion-filter")
	c.start()

	anth := map[string]string{"Authorization": "", "X-Api-Key": relayKey}
	for _, stream := range []bool{false, true} {
		s := ""
		if stream {
			s = `,"stream":true`
		}
		resp, body := c.post("/v1/messages", `{"model":"az-filtered","max_tokens":64,"messages":[{"role":"user","content":"hi"}]`+s+`}`, anth)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"stop_reason":"refusal"`) || !strings.Contains(body, `"id":"msg_chatcmpl-`) {
			t.Errorf("messages stream=%v: %d %.600s", stream, resp.StatusCode, body)
		}
		resp, body = c.post("/v1/responses", `{"model":"az-filtered","input":"hi"`+s+`}`, nil)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"status":"incomplete"`) || !strings.Contains(body, `"incomplete_details":{"reason":"content_filter"}`) {
			t.Errorf("responses stream=%v: %d %.600s", stream, resp.StatusCode, body)
		}
		method := "generateContent"
		if stream {
			method = "streamGenerateContent?alt=sse"
		}
		resp, body = c.post("/v1beta/models/az-filtered:"+method, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
			map[string]string{"Authorization": "", "X-Goog-Api-Key": relayKey})
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"finishReason":"SAFETY"`) {
			t.Errorf("gemini stream=%v: %d %.600s", stream, resp.StatusCode, body)
		}
		resp, body = c.post("/v1/chat/completions", `{"model":"az-filtered","messages":[{"role":"user","content":"hi"}]`+s+`}`, nil)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"finish_reason":"content_filter"`) || !strings.Contains(body, `"content_filter_results"`) || !strings.Contains(body, `"prompt_filter_results"`) {
			t.Errorf("chat stream=%v: %d %.600s", stream, resp.StatusCode, body)
		}
	}
	// The SDK reads the refusal.
	msg, err := c.anthropic().Messages.New(t.Context(), anthropic.MessageNewParams{Model: "az-filtered", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	if err != nil || msg.StopReason != anthropic.StopReasonRefusal {
		t.Fatalf("anthropic-sdk-go: %v %+v", err, msg)
	}
}

// An OpenAI-compatible server's reasoning, in whichever member it sends
// it (reasoning_content: DeepSeek; reasoning: Ollama), reaches a
// Messages caller as thinking, whole and streamed; every profiled stream
// asks for usage where the server needs asking.
func TestProfiles_CompatReasoningReachesTranslatedShapes(t *testing.T) {
	t.Parallel()
	c := newCloudFixture(t)
	for _, s := range []string{"deepseek", "ollama", "groq", "vllm"} {
		h := c.host(s, func(h *snapshot.Host) { h.BaseURL, h.Profile = c.url+"/compat/"+s+"/v1", s })
		c.key(h, s+"-k", "sk-compat-"+s+"-0123456789")
		c.bind(c.model(s, true), h, wire.ShapeOpenAI, s+"-r1-reasoning")
	}
	c.start()
	anth := map[string]string{"Authorization": "", "X-Api-Key": relayKey}
	for _, s := range []string{"deepseek", "ollama", "groq", "vllm"} {
		for _, stream := range []string{"", `,"stream":true`} {
			resp, body := c.post("/v1/messages", `{"model":"`+s+`","max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":2048},"messages":[{"role":"user","content":"hi there"}]`+stream+`}`, anth)
			want := "A short greeting" // whole; a stream has it word by word
			if stream != "" {
				want = `"type":"thinking_delta","thinking":" short"`
			}
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"type":"thinking"`) || !strings.Contains(body, want) {
				t.Errorf("%s%s: no thinking: %d %.800s", s, stream, resp.StatusCode, body)
			}
		}
		if resp, body := c.post("/v1/chat/completions", `{"model":"`+s+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("%s: chat stream: %d %.300s", s, resp.StatusCode, body)
		}
	}
	// The streams asked for usage, the caller's own and the translated.
	for _, r := range c.requests() {
		if !r.Stream {
			continue
		}
		var b struct {
			StreamOptions *struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
		}
		_ = json.Unmarshal(r.Body, &b)
		if b.StreamOptions == nil || !b.StreamOptions.IncludeUsage {
			t.Errorf("a stream to %s did not ask for usage: %s", r.Model, r.Body)
		}
	}
}
