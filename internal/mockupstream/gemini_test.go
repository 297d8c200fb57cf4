package mockupstream_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/mockupstream"
)

// geminiResponse is the part of GenerateContentResponse the tests read.
type geminiResponse struct {
	Candidates []struct {
		Content struct {
			Role  string `json:"role"`
			Parts []struct {
				Text         string `json:"text"`
				Thought      bool   `json:"thought"`
				FunctionCall *struct {
					Name string          `json:"name"`
					Args json.RawMessage `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *struct {
		PromptTokenCount        int `json:"promptTokenCount"`
		CandidatesTokenCount    int `json:"candidatesTokenCount"`
		TotalTokenCount         int `json:"totalTokenCount"`
		CachedContentTokenCount int `json:"cachedContentTokenCount"`
		ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
	} `json:"usageMetadata"`
	ModelVersion string `json:"modelVersion"`
	ResponseID   string `json:"responseId"`
}

const geminiHello = `{"systemInstruction":{"parts":[{"text":"Be brief."}]},"contents":[{"role":"user","parts":[{"text":"Hello Gemini"}]}]}`

func TestGemini_GenerateContent(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	resp, raw := post(t, b.srv.URL+"/v1beta/models/gemini-test:generateContent", geminiHeaders, geminiHello)
	equal(t, "status", resp.StatusCode, 200)
	var got geminiResponse
	decodeJSON(t, raw, &got)
	c := got.Candidates[0]
	equal(t, "text", c.Content.Parts[0].Text, "Hello from gemini-test. You said: Hello Gemini")
	equal(t, "role", c.Content.Role, "model")
	equal(t, "finishReason", c.FinishReason, "STOP")
	equal(t, "modelVersion", got.ModelVersion, "gemini-test")
	u := got.UsageMetadata
	equal(t, "candidatesTokenCount", u.CandidatesTokenCount, 7)
	equal(t, "totalTokenCount", u.TotalTokenCount, u.PromptTokenCount+u.CandidatesTokenCount)
	if got.ResponseID == "" {
		t.Error("no responseId")
	}
	rec := only(t, b.mock)
	equal(t, "recorded model", rec.Model, "gemini-test")
	equal(t, "recorded shape", rec.Shape, mockupstream.ShapeGemini)
	equal(t, "recorded key", rec.Header.Get("x-goog-api-key"), "AIza-test")

	// snake_case works like lowerCamel, as in proto3 JSON.
	_, raw = post(t, b.srv.URL+"/v1beta/models/gemini-test:generateContent", geminiHeaders,
		`{"contents":[{"parts":[{"text":"hi"}]}],"generation_config":{"max_output_tokens":2}}`)
	decodeJSON(t, raw, &got)
	equal(t, "snake max tokens", got.Candidates[0].FinishReason, "MAX_TOKENS")
	equal(t, "truncated text", got.Candidates[0].Content.Parts[0].Text, "Hello from")
}

func TestGemini_StreamSSE(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	resp, raw := post(t, b.srv.URL+"/v1beta/models/gemini-test:streamGenerateContent?alt=sse", geminiHeaders, geminiHello)
	equal(t, "content-type", resp.Header.Get("Content-Type"), "text/event-stream")
	events := readSSE(t, strings.NewReader(string(raw)))
	if len(events) < 5 {
		t.Fatalf("%d chunks", len(events))
	}
	var text strings.Builder
	var last geminiResponse
	for i, ev := range events {
		if ev.name != "" || ev.data == "[DONE]" {
			t.Fatalf("event %d is not data-only JSON: %+v", i, ev)
		}
		var chunk geminiResponse
		decodeJSON(t, []byte(ev.data), &chunk)
		if i < len(events)-1 && chunk.Candidates[0].FinishReason != "" {
			t.Errorf("chunk %d finished early", i)
		}
		text.WriteString(chunk.Candidates[0].Content.Parts[0].Text)
		last = chunk
	}
	equal(t, "text", text.String(), "Hello from gemini-test. You said: Hello Gemini")
	equal(t, "finishReason", last.Candidates[0].FinishReason, "STOP")
	equal(t, "candidatesTokenCount", last.UsageMetadata.CandidatesTokenCount, 7)
	equal(t, "recorded stream", only(t, b.mock).Stream, true)
}

func TestGemini_StreamJSONArrayAndTools(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	body := `{"contents":[{"role":"user","parts":[{"text":"weather and time?"}]}],
		"tools":[{"functionDeclarations":[
			{"name":"get_weather","parameters":{"type":"OBJECT","properties":{"city":{"type":"STRING"}},"required":["city"]}},
			{"name":"get_time","parametersJsonSchema":{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}}]}]}`
	resp, raw := post(t, b.srv.URL+"/v1beta/models/gemini-parallel:streamGenerateContent", geminiHeaders, body)
	hasPrefix(t, "content-type", resp.Header.Get("Content-Type"), "application/json")
	var chunks []geminiResponse
	decodeJSON(t, raw, &chunks)
	var calls []string
	for _, ch := range chunks {
		for _, p := range ch.Candidates[0].Content.Parts {
			if p.FunctionCall != nil {
				calls = append(calls, p.FunctionCall.Name+string(p.FunctionCall.Args))
			}
		}
	}
	equal(t, "calls", strings.Join(calls, " "), `get_weather{"city":"example"} get_time{"n":1}`)
	equal(t, "finishReason", chunks[len(chunks)-1].Candidates[0].FinishReason, "STOP")

	// A function response is answered in text.
	body = `{"contents":[{"role":"user","parts":[{"text":"weather?"}]},
		{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"temp":3}}}]}],
		"tools":[{"functionDeclarations":[{"name":"get_weather","parameters":{"type":"OBJECT"}}]}]}`
	_, raw = post(t, b.srv.URL+"/v1beta/models/gemini-test:generateContent?key=AIza-test", nil, body)
	var got geminiResponse
	decodeJSON(t, raw, &got)
	equal(t, "tool result reply", got.Candidates[0].Content.Parts[0].Text, `The tool returned: {"temp":3}`)
}

func TestGemini_UsageMarkers(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	body := `{"contents":[{"role":"user","parts":[{"text":"` + strings.Repeat("words ", 80) + `"}]}],
		"generationConfig":{"thinkingConfig":{"includeThoughts":true}}}`
	_, raw := post(t, b.srv.URL+"/v1beta/models/gemini-cached-thinking:generateContent", geminiHeaders, body)
	var got geminiResponse
	decodeJSON(t, raw, &got)
	parts := got.Candidates[0].Content.Parts
	equal(t, "thought part", parts[0].Thought, true)
	equal(t, "answer part", parts[1].Thought, false)
	u := got.UsageMetadata
	equal(t, "cachedContentTokenCount", u.CachedContentTokenCount, u.PromptTokenCount/2)
	if u.ThoughtsTokenCount == 0 {
		t.Error("no thoughtsTokenCount")
	}
	equal(t, "candidates exclude thoughts", u.CandidatesTokenCount, len(strings.Fields(parts[1].Text)))
	equal(t, "total", u.TotalTokenCount, u.PromptTokenCount+u.CandidatesTokenCount+u.ThoughtsTokenCount)
}

func TestGemini_EmbeddingsAndErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	_, raw := post(t, b.srv.URL+"/v1beta/models/gemini-embedding-001:embedContent", geminiHeaders,
		`{"content":{"parts":[{"text":"alpha"}]},"outputDimensionality":8}`)
	var one struct {
		Embedding struct {
			Values []float64 `json:"values"`
		} `json:"embedding"`
	}
	decodeJSON(t, raw, &one)
	equal(t, "dims", len(one.Embedding.Values), 8)

	_, raw = post(t, b.srv.URL+"/v1beta/models/gemini-embedding-001:batchEmbedContents", geminiHeaders,
		`{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"alpha"}]},"outputDimensionality":8},
		{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"beta"}]}}]}`)
	var batch struct {
		Embeddings []struct {
			Values []float64 `json:"values"`
		} `json:"embeddings"`
	}
	decodeJSON(t, raw, &batch)
	equal(t, "batch size", len(batch.Embeddings), 2)
	equal(t, "same input, same vector", batch.Embeddings[0].Values[3], one.Embedding.Values[3])
	equal(t, "default dims", len(batch.Embeddings[1].Values), 3072)
	equal(t, "recorded shape", b.mock.Requests()[1].Shape, mockupstream.ShapeGeminiEmbeddings)
	for _, m := range []string{``, `"model":"models/other",`} {
		resp, raw := post(t, b.srv.URL+"/v1beta/models/gemini-embedding-001:batchEmbedContents", geminiHeaders,
			`{"requests":[{`+m+`"content":{"parts":[{"text":"alpha"}]}}]}`)
		equal(t, "batch request of another model", resp.StatusCode, 400)
		if !strings.Contains(string(raw), "model") {
			t.Errorf("batch model error %s", raw)
		}
	}

	resp, raw := post(t, b.srv.URL+"/v1beta/models/gemini-test:generateContent", geminiHeaders, `{"contents":[]}`)
	equal(t, "empty contents status", resp.StatusCode, 400)
	var e struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	decodeJSON(t, raw, &e)
	equal(t, "error code", e.Error.Code, 400)
	equal(t, "error status", e.Error.Status, "INVALID_ARGUMENT")
	if !strings.Contains(e.Error.Message, "contents is not specified") {
		t.Errorf("message = %q", e.Error.Message)
	}
}
