package translator

import (
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

func TestGeminiFinish(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]canonical.FinishReason{
		"STOP": canonical.FinishStop, "MAX_TOKENS": canonical.FinishLength, "SAFETY": canonical.FinishContentFilter,
		"RECITATION": canonical.FinishContentFilter, "PROHIBITED_CONTENT": canonical.FinishContentFilter,
		"MALFORMED_FUNCTION_CALL": canonical.FinishOther, "OTHER": canonical.FinishOther,
	} {
		if got := finishFromGemini(in, false); got != want {
			t.Errorf("%s → %s, want %s", in, got, want)
		}
	}
	if finishFromGemini("STOP", true) != canonical.FinishToolCalls {
		t.Error("a function call ends with STOP: tool_calls")
	}
	for f, want := range map[canonical.FinishReason]string{canonical.FinishOther: "stop", canonical.FinishContentFilter: "content_filter"} {
		if chatFinish(f) != want {
			t.Errorf("chat finish of %s", f)
		}
	}
}

func TestGeminiUsage(t *testing.T) {
	t.Parallel()
	u := gemUsage{PromptTokenCount: 100, CachedContentTokenCount: 40, CandidatesTokenCount: 10, ThoughtsTokenCount: 30, ToolUsePromptTokenCount: 5}
	if got := u.canonical(); got != (canonical.Usage{Input: 105, Output: 40, CacheRead: 40, Reasoning: 30}) {
		t.Errorf("usage %+v", got)
	}
}

func TestGeminiPath(t *testing.T) {
	t.Parallel()
	u := newGeminiUpstream(testNow)
	if p := u.path(&Target{UpstreamModel: "models/gemini-2.5-flash"}, true); p != "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse" {
		t.Errorf("stream path %s", p)
	}
	if p := u.path(&Target{UpstreamModel: "gemini-2.5-flash"}, false); p != "/v1beta/models/gemini-2.5-flash:generateContent" {
		t.Errorf("path %s", p)
	}
}

// Tool-call indices keep rising across chunks (the bug that put every
// Gemini call at index 0), and a trailing chunk's usage still counts.
func TestGeminiStream_IndicesAcrossChunks(t *testing.T) {
	t.Parallel()
	stream := strings.Join([]string{
		`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Checking."}]}}],"usageMetadata":{"promptTokenCount":9},"responseId":"r9","modelVersion":"g"}`,
		`data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"a","args":{"x":1}}}]}}],"responseId":"r9"}`,
		`data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"b","args":{}}},{"functionCall":{"name":"c"}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":3}}`,
		`data: {"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":4}}`,
		``,
	}, "\n\n")
	req := minimalRequest(t, wire.InboundChat, true)
	req.C.IncludeUsage = true
	out, usage := translateAnswer(t, &chatGemini, req, caseMeta{}, 200, []byte(stream))
	validateChatStream(t, out)
	r := chatMessageOf(t, out, true)
	if len(r.indices) != 3 || r.indices[0] != 0 || r.indices[1] != 1 || r.indices[2] != 2 {
		t.Errorf("indices %v", r.indices)
	}
	if r.Message.ToolCalls[1].Function.Arguments != "{}" || r.Message.ToolCalls[2].Function.Arguments != "{}" || r.FinishReason != "tool_calls" {
		t.Errorf("%+v %s", r.Message.ToolCalls, r.FinishReason)
	}
	if usage.Output != 4 || r.Usage.CompletionTokens != 4 {
		t.Errorf("usage %+v / %+v", usage, r.Usage)
	}
}

func TestGeminiStream_EndsOnlyWhenFinished(t *testing.T) {
	t.Parallel()
	req := minimalRequest(t, wire.InboundMessages, true)
	cut := "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}]}}],\"responseId\":\"r\"}\n\n"
	out, _ := translateAnswer(t, &messagesGemini, req, caseMeta{}, 200, []byte(cut))
	if !strings.Contains(string(out), "event: error") || strings.Contains(string(out), "message_stop") {
		t.Errorf("a cut Gemini stream looked whole:\n%s", out)
	}
	blocked := "data: {\"promptFeedback\":{\"blockReason\":\"SAFETY\"},\"usageMetadata\":{\"promptTokenCount\":4},\"responseId\":\"r\"}\n\n"
	out, _ = translateAnswer(t, &messagesGemini, req, caseMeta{}, 200, []byte(blocked))
	validateMessagesStream(t, out)
	if !strings.Contains(string(out), `"stop_reason":"refusal"`) {
		t.Errorf("blocked prompt:\n%s", out)
	}
	tr, _ := New(minimalRequest(t, wire.InboundChat, false), Target{Shape: wire.ShapeGemini}, testNow)
	body, err := tr.AppendResponse(nil, []byte(`{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"responseId":"r"}`))
	if err != nil || !strings.Contains(string(body), `"finish_reason":"content_filter"`) {
		t.Errorf("blocked prompt, whole: %s %v", body, err)
	}
}
