package wire

import (
	"errors"
	"net/http/httptest"
	"testing"
	"time"
)

func TestParseCall_ReadsPathAndDialect(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, target string
		header       map[string]string
		want         Call
	}{
		{"chat", "/v1/chat/completions", nil, Call{Path: "/v1/chat/completions", In: InboundChat}},
		{"messages under /openai speak Anthropic", "/openai/v1/messages", nil, Call{Path: "/v1/messages", In: InboundMessages, Dialect: DialectAnthropic}},
		{"chat under /anthropic speaks OpenAI", "/anthropic/v1/chat/completions", nil, Call{Path: "/v1/chat/completions", In: InboundChat}},
		{"endpoint", "/v1/rerank", nil, Call{Path: "/v1/rerank", In: InboundRerank}},
		{"models under /anthropic", "/anthropic/v1/models", nil, Call{Path: "/v1/models", Dialect: DialectAnthropic, Models: true}},
		{"models for anthropic-version", "/v1/models", map[string]string{"Anthropic-Version": "2023-06-01"}, Call{Path: "/v1/models", Dialect: DialectAnthropic, Models: true}},
		{"models for @google/genai", "/v1/models", map[string]string{"X-Goog-Api-Key": "k"}, Call{Path: "/v1/models", Dialect: DialectGemini, Models: true, GoogleKey: true}},
		{"genai header beside a relay key", "/v1/models", map[string]string{"X-Goog-Api-Key": "k", "Authorization": "Bearer sk"}, Call{Path: "/v1/models", Models: true}},
		{"one OpenAI model", "/v1/models/gpt-x", nil, Call{Path: "/v1/models/gpt-x", Models: true, Model: "gpt-x"}},
		{"one model, unknown method", "/v1/models/m:think", nil, Call{Path: "/v1/models/m:think", Models: true, Model: "m:think"}},
		{"gemini list", "/v1beta/models", nil, Call{Path: "/v1beta/models", Dialect: DialectGemini, Models: true, GoogleKey: true}},
		{"gemini list under /gemini", "/gemini/v1/models", nil, Call{Path: "/v1/models", Dialect: DialectGemini, Models: true, GoogleKey: true}},
		{"gemini model", "/gemini/v1/models/models/g-1", nil, Call{Path: "/v1/models/models/g-1", Dialect: DialectGemini, Models: true, Model: "g-1", GoogleKey: true}},
		{"generateContent", "/v1beta/models/g-1:generateContent", nil,
			Call{Path: "/v1beta/models/g-1:generateContent", In: InboundGemini, Dialect: DialectGemini, Model: "g-1", GoogleKey: true, modelInPath: true}},
		{"stream with alt=sse", "/v1beta/models/models/a/b@h:streamGenerateContent?alt=sse", nil,
			Call{Path: "/v1beta/models/models/a/b@h:streamGenerateContent", In: InboundGemini, Dialect: DialectGemini, Model: "a/b@h", Stream: true, GoogleKey: true, modelInPath: true}},
		{"embedContent under /v1", "/v1/models/e:embedContent", nil,
			Call{Path: "/v1/models/e:embedContent", In: InboundGeminiEmbed, Dialect: DialectGemini, Model: "e", GoogleKey: true, modelInPath: true}},
		{"countTokens", "/v1beta/models/g:countTokens", nil,
			Call{Path: "/v1beta/models/g:countTokens", In: InboundGeminiCountTokens, Dialect: DialectGemini, Model: "g", GoogleKey: true, modelInPath: true}},
		{"no model", "/v1beta/models/:generateContent", nil, Call{Path: "/v1beta/models/:generateContent"}},
		{"not a path", "/v1/nothing", nil, Call{Path: "/v1/nothing"}},
		{"root", "/gemini/", nil, Call{Path: "/", Dialect: DialectGemini, GoogleKey: true}},
	} {
		r := httptest.NewRequest("POST", tc.target, nil)
		for k, v := range tc.header {
			r.Header.Set(k, v)
		}
		if got := ParseCall(r); got != tc.want {
			t.Errorf("%s: %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

func TestParseCall_RefusesAStreamWithoutSSE(t *testing.T) {
	t.Parallel()
	c := ParseCall(httptest.NewRequest("POST", "/v1beta/models/g:streamGenerateContent", nil))
	if c.Refused == nil || !errors.Is(c.Refused, ErrMalformedRequest) || c.In != InboundGemini {
		t.Fatalf("%+v, want a refusal of the JSON stream", c)
	}
}

func TestCallScan_TakesModelAndStreamFromTheGeminiPath(t *testing.T) {
	t.Parallel()
	c := ParseCall(httptest.NewRequest("POST", "/v1beta/models/g-1:streamGenerateContent?alt=sse", nil))
	r, err := c.Scan([]byte(`{"contents":[],"generationConfig":{"maxOutputTokens":300}}`))
	if err != nil || r.Model != "g-1" || !r.Stream || !r.IncludeUsage || r.MaxTokens != 300 || !r.ModelInPath {
		t.Fatalf("%+v, %v", r, err)
	}
	if _, err := c.Scan([]byte(`{"generationConfig":{"maxOutputTokens":3,"max_output_tokens":9}}`)); !errors.Is(err, ErrMalformedRequest) {
		t.Fatalf("duplicate maxOutputTokens: %v, want a refusal", err)
	}
	if _, err := c.Scan([]byte(`[]`)); !errors.Is(err, ErrNotObject) {
		t.Fatalf("array body: %v", err)
	}
	chat := ParseCall(httptest.NewRequest("POST", "/v1/chat/completions", nil))
	r, err = chat.Scan([]byte(`{"model":"m","stream":true}`))
	if err != nil || r.Model != "m" || !r.Stream || r.ModelInPath {
		t.Fatalf("chat: %+v, %v", r, err)
	}
	if _, err := chat.Scan([]byte(`{}`)); !errors.Is(err, ErrMissingModel) {
		t.Fatalf("chat without a model: %v", err)
	}
}

func TestDialect_AppendModelList(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	listed := []Model{
		{Name: "a", Provider: "openai", CreatedAt: at, ContextWindow: 8, MaxOutputTokens: 4},
		{Name: "e", Provider: "google", Embedding: true},
	}
	for _, tc := range []struct {
		d          Dialect
		list, none string
	}{
		{DialectOpenAI,
			`{"object":"list","data":[{"id":"a","object":"model","created":1735787045,"owned_by":"openai"},{"id":"e","object":"model","created":0,"owned_by":"google"}]}`,
			`{"object":"list","data":[]}`},
		{DialectAnthropic,
			`{"data":[{"type":"model","id":"a","display_name":"a","created_at":"2025-01-02T03:04:05Z"},{"type":"model","id":"e","display_name":"e","created_at":"1970-01-01T00:00:00Z"}],"has_more":false,"first_id":"a","last_id":"e"}`,
			`{"data":[],"has_more":false,"first_id":null,"last_id":null}`},
		{DialectGemini,
			`{"models":[{"name":"models/a","baseModelId":"a","version":"001","displayName":"a","inputTokenLimit":8,"outputTokenLimit":4,"supportedGenerationMethods":["generateContent","countTokens"]},` +
				`{"name":"models/e","baseModelId":"e","version":"001","displayName":"e","supportedGenerationMethods":["embedContent","batchEmbedContents"]}]}`,
			`{"models":[]}`},
	} {
		if got := string(tc.d.AppendModelList(nil, listed)); got != tc.list {
			t.Errorf("dialect %d: %s\nwant %s", tc.d, got, tc.list)
		}
		if got := string(tc.d.AppendModelList(nil, nil)); got != tc.none {
			t.Errorf("dialect %d, empty: %s\nwant %s", tc.d, got, tc.none)
		}
	}
}
