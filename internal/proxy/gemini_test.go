package proxy_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Gemini's own API, served by every binding shape: bodies and stream
// chunks read as Google's SDKs read them, errors in Gemini's shape, the
// relay key as x-goog-api-key or ?key=, and byte passthrough (with the
// upstream model in the path) to gemini bindings.

var shapes = []wire.Shape{wire.ShapeOpenAI, wire.ShapeOpenAIResponses, wire.ShapeAnthropic, wire.ShapeGemini}

// gemResp is what @google/genai reads from a GenerateContentResponse.
type gemResp struct {
	Candidates []struct {
		Content *struct {
			Parts []struct {
				Text         string `json:"text"`
				Thought      bool   `json:"thought"`
				FunctionCall *struct {
					ID   string         `json:"id"`
					Name string         `json:"name"`
					Args map[string]any `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
			Role string `json:"role"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *struct {
		PromptTokenCount     int64 `json:"promptTokenCount"`
		CandidatesTokenCount int64 `json:"candidatesTokenCount"`
		TotalTokenCount      int64 `json:"totalTokenCount"`
	} `json:"usageMetadata"`
	Error *gemError `json:"error"`
}

type gemError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
}

func (r gemResp) text() string {
	var b strings.Builder
	for _, c := range r.Candidates {
		if c.Content == nil {
			continue
		}
		for _, p := range c.Content.Parts {
			if !p.Thought {
				b.WriteString(p.Text)
			}
		}
	}
	return b.String()
}

func decodeGem(t *testing.T, body string) gemResp {
	t.Helper()
	var r gemResp
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, body)
	}
	return r
}

// gemChunks reads an SSE stream of GenerateContentResponse chunks.
func gemChunks(t *testing.T, body string) []gemResp {
	t.Helper()
	var out []gemResp
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			out = append(out, decodeGem(t, data))
		}
	}
	if len(out) == 0 {
		t.Fatalf("no chunks in %q", body)
	}
	return out
}

// gemErr checks a body is Gemini's error shape with the status and code.
func gemErr(t *testing.T, resp *http.Response, body string, status int, grpc string) {
	t.Helper()
	r := decodeGem(t, body)
	if resp.StatusCode != status || r.Error == nil || r.Error.Code != status || r.Error.Status != grpc || r.Error.Message == "" {
		t.Errorf("got %d %s, want %d %s", resp.StatusCode, body, status, grpc)
	}
}

const gemHello = `{"contents":[{"role":"user","parts":[{"text":"Hello there, relay friend"}]}],"systemInstruction":{"parts":[{"text":"Be brief."}]},"generationConfig":{"maxOutputTokens":256}}`

var goog = map[string]string{"Authorization": "", "X-Goog-Api-Key": relayKey}

func TestGemini_EveryShape(t *testing.T) {
	t.Parallel()
	f := translatedFixture(t)
	for _, shape := range shapes {
		model := string(shape)
		t.Run(model+"/generate", func(t *testing.T) {
			resp, body := f.post("/v1beta/models/"+model+":generateContent", gemHello, goog)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			r := decodeGem(t, body)
			if r.text() == "" || r.Candidates[0].FinishReason != "STOP" || r.UsageMetadata == nil || r.UsageMetadata.TotalTokenCount == 0 {
				t.Errorf("answer: %s", body)
			}
			rec := f.rec.next(t)
			if rec.Inbound != "gemini" || rec.Upstream != shape || rec.Model != model || rec.Usage.Input == 0 || rec.Usage.Output == 0 {
				t.Errorf("record: %+v", rec)
			}
			if shape == wire.ShapeGemini {
				up := f.waitFor(func(r mockupstream.Request) bool {
					return r.Path == "/v1beta/models/"+upstreamNames[shape]+"-cached-cache-write:generateContent"
				})
				if string(up.Body) != gemHello || up.RawQuery != "" {
					t.Errorf("passthrough changed the request: %s ?%s", up.Body, up.RawQuery)
				}
			}
		})
		t.Run(model+"/stream", func(t *testing.T) {
			resp, body := f.post("/gemini/v1beta/models/"+model+":streamGenerateContent?alt=sse&key="+relayKey, gemHello, map[string]string{"Authorization": ""})
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			chunks := gemChunks(t, body)
			var text strings.Builder
			for _, c := range chunks {
				text.WriteString(c.text())
			}
			last := chunks[len(chunks)-1]
			if text.Len() == 0 || len(last.Candidates) == 0 || last.Candidates[0].FinishReason != "STOP" || last.UsageMetadata == nil {
				t.Errorf("stream: %s", body)
			}
			rec := f.rec.next(t)
			if rec.Inbound != "gemini" || !rec.Stream || rec.Usage.Output == 0 {
				t.Errorf("record: %+v", rec)
			}
			if shape == wire.ShapeGemini {
				up := f.waitFor(func(r mockupstream.Request) bool {
					return r.Stream && strings.HasSuffix(r.Path, ":streamGenerateContent")
				})
				if up.RawQuery != "alt=sse" || up.Header.Get("X-Goog-Api-Key") == relayKey {
					t.Errorf("upstream query %q, key header %q", up.RawQuery, up.Header.Get("X-Goog-Api-Key"))
				}
			}
		})
		t.Run(model+"/tools", func(t *testing.T) {
			req := `{"contents":[{"role":"user","parts":[{"text":"weather in Paris"}]}],"tools":[{"functionDeclarations":[{"name":"get_weather","parameters":{"type":"OBJECT","properties":{"city":{"type":"STRING"}},"required":["city"]}}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}}`
			resp, body := f.post("/v1beta/models/"+model+":generateContent", req, goog)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			r := decodeGem(t, body)
			var call json.RawMessage
			var raw struct {
				Candidates []struct {
					Content json.RawMessage `json:"content"`
				} `json:"candidates"`
			}
			_ = json.Unmarshal([]byte(body), &raw)
			for _, p := range r.Candidates[0].Content.Parts {
				if p.FunctionCall != nil && p.FunctionCall.Name == "get_weather" {
					b, _ := json.Marshal(map[string]any{"functionResponse": map[string]any{"id": p.FunctionCall.ID, "name": p.FunctionCall.Name, "response": map[string]any{"output": "18C"}}})
					call = b
				}
			}
			if call == nil {
				t.Fatalf("no function call: %s", body)
			}
			f.rec.next(t)
			// The SDK's chat sends the model's content back with the result.
			next := `{"contents":[{"role":"user","parts":[{"text":"weather in Paris"}]},` + string(raw.Candidates[0].Content) + `,{"role":"user","parts":[` + string(call) + `]}],"tools":[{"functionDeclarations":[{"name":"get_weather","parameters":{"type":"OBJECT","properties":{"city":{"type":"STRING"}}}}]}]}`
			resp, body = f.post("/v1beta/models/"+model+":generateContent", next, goog)
			if resp.StatusCode != 200 || decodeGem(t, body).text() == "" {
				t.Errorf("second turn: %d %s", resp.StatusCode, body)
			}
			f.rec.next(t)
		})
	}
}

func TestGemini_Errors(t *testing.T) {
	t.Parallel()
	f := translatedFixture(t)
	path := "/v1beta/models/openai:generateContent"
	for _, c := range []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
		grpc                     string
	}{
		{"no key", "POST", path, gemHello, map[string]string{"Authorization": ""}, 401, "UNAUTHENTICATED"},
		{"bad key", "POST", path, gemHello, map[string]string{"Authorization": "", "X-Goog-Api-Key": "sk-wr-nope"}, 401, "UNAUTHENTICATED"},
		{"bad query key", "POST", path + "?key=sk-wr-nope", gemHello, map[string]string{"Authorization": ""}, 401, "UNAUTHENTICATED"},
		{"no such model", "POST", "/v1beta/models/nope:generateContent", gemHello, goog, 404, "NOT_FOUND"},
		{"not granted", "POST", path, gemHello, map[string]string{"Authorization": "", "X-Goog-Api-Key": noPolicyKey}, 404, "NOT_FOUND"},
		{"GET a method", "GET", path, "", goog, 405, "UNIMPLEMENTED"},
		{"stream without sse", "POST", "/v1beta/models/openai:streamGenerateContent", gemHello, goog, 400, "INVALID_ARGUMENT"},
		{"malformed", "POST", path, `{"contents":`, goog, 400, "INVALID_ARGUMENT"},
		{"candidates", "POST", path, `{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"candidateCount":2}}`, goog, 400, "INVALID_ARGUMENT"},
		{"count tokens elsewhere", "POST", "/v1beta/models/anthropic:countTokens", gemHello, goog, 400, "INVALID_ARGUMENT"},
		{"no such model listed", "GET", "/v1beta/models/nope", "", goog, 404, "NOT_FOUND"},
		{"upstream 400 translated", "POST", path, gemHello, map[string]string{"Authorization": "", "X-Goog-Api-Key": relayKey, testFault: "400"}, 400, "INVALID_ARGUMENT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := f.do(c.method, c.path, c.body, c.header)
			gemErr(t, resp, body, c.status, c.grpc)
		})
	}
}

func TestGemini_CountTokensAndModels(t *testing.T) {
	t.Parallel()
	f := translatedFixture(t)
	resp, body := f.post("/v1beta/models/gemini:countTokens", `{"contents":[{"parts":[{"text":"count these tokens please"}]}]}`, goog)
	var n struct {
		TotalTokens int64 `json:"totalTokens"`
	}
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &n) != nil || n.TotalTokens == 0 {
		t.Errorf("countTokens: %d %s", resp.StatusCode, body)
	}
	if rec := f.rec.next(t); rec.Inbound != "gemini_count_tokens" {
		t.Errorf("record: %+v", rec)
	}

	// @google/genai's default API version lists at /v1/models with only its
	// own key header: Gemini's shape, not OpenAI's.
	for _, p := range []string{"/v1beta/models", "/gemini/v1beta/models", "/gemini/v1/models", "/v1/models"} {
		resp, body = f.do("GET", p, "", goog)
		var list struct {
			Models []struct {
				Name                       string   `json:"name"`
				SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
			} `json:"models"`
		}
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list.Models) != 4*3 || list.Models[0].Name == "" || !strings.HasPrefix(list.Models[0].Name, "models/") {
			t.Errorf("%s: %d %s", p, resp.StatusCode, body)
		}
	}
	resp, body = f.do("GET", "/v1beta/models/models/anthropic", "", goog)
	if resp.StatusCode != 200 || !strings.Contains(body, `"name":"models/anthropic"`) {
		t.Errorf("one model: %d %s", resp.StatusCode, body)
	}
	resp, body = f.do("GET", "/v1/models/anthropic", "", goog)
	if resp.StatusCode != 200 || !strings.Contains(body, `"name":"models/anthropic"`) {
		t.Errorf("one model at /v1 with x-goog-api-key: %d %s", resp.StatusCode, body)
	}
	// OpenAI's GET /v1/models/{name} is untouched.
	resp, body = f.do("GET", "/v1/models/anthropic", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `"object":"model"`) {
		t.Errorf("OpenAI model: %d %s", resp.StatusCode, body)
	}
	// Gemini's v1 path for a method.
	resp, body = f.post("/v1/models/openai:generateContent", gemHello, goog)
	if resp.StatusCode != 200 || decodeGem(t, body).text() == "" {
		t.Errorf("/v1: %d %s", resp.StatusCode, body)
	}
}

func TestGemini_Embeddings(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	g := f.host("g")
	f.key(g, "g-1", geminiSecret)
	o := f.host("o")
	f.key(o, "o-1", openaiSecret)
	for _, b := range []*snapshot.Binding{
		f.bind(f.model("emb-g", true), g, wire.ShapeGemini, "models/gemini-embedding-001"),
		f.bind(f.model("emb-o", true), o, wire.ShapeOpenAI, "text-embedding-3-small"),
	} {
		for _, m := range f.data.Models {
			if m.ID == b.ModelID {
				m.Kind = "embedding"
			}
		}
	}
	f.start()
	for _, model := range []string{"emb-g", "emb-o"} {
		t.Run(model, func(t *testing.T) {
			resp, body := f.post("/v1beta/models/"+model+":embedContent", `{"model":"models/`+model+`","content":{"parts":[{"text":"relay"}]},"outputDimensionality":8}`, goog)
			var one struct {
				Embedding struct {
					Values []float64 `json:"values"`
				} `json:"embedding"`
			}
			if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &one) != nil || len(one.Embedding.Values) != 8 {
				t.Errorf("embedContent: %d %s", resp.StatusCode, body)
			}
			if rec := f.rec.next(t); rec.Inbound != "gemini_embed_content" || rec.Model != model {
				t.Errorf("record: %+v", rec)
			}
			resp, body = f.post("/v1beta/models/"+model+":batchEmbedContents",
				`{"requests":[{"model":"models/`+model+`","content":{"parts":[{"text":"one"}]}},{"model":"models/`+model+`","content":{"parts":[{"text":"two"}]}}]}`, goog)
			var many struct {
				Embeddings []struct {
					Values []float64 `json:"values"`
				} `json:"embeddings"`
			}
			if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &many) != nil || len(many.Embeddings) != 2 || len(many.Embeddings[1].Values) == 0 {
				t.Errorf("batchEmbedContents: %d %s", resp.StatusCode, body)
			}
			f.rec.next(t)
		})
	}
	// Gemini checks each request's model against the path: Relay names
	// the upstream model in both.
	up := f.waitFor(func(r mockupstream.Request) bool { return strings.HasSuffix(r.Path, ":batchEmbedContents") })
	if up.Path != "/v1beta/models/gemini-embedding-001:batchEmbedContents" || strings.Contains(string(up.Body), "emb-g") {
		t.Errorf("upstream %s %s", up.Path, up.Body)
	}
}

// A stream that breaks after it began ends with an error chunk in
// Gemini's shape, on the passthrough path and translated.
func TestGemini_StreamBreaks(t *testing.T) {
	t.Parallel()
	f := translatedFixture(t)
	for _, model := range []string{"gemini", "openai"} {
		resp, body := f.post("/v1beta/models/"+model+":streamGenerateContent?alt=sse", gemHello, map[string]string{testFault: "midstream-2"})
		chunks := gemChunks(t, body)
		last := chunks[len(chunks)-1]
		if resp.StatusCode != 200 || last.Error == nil || last.Error.Status == "" || last.Error.Code < 400 {
			t.Errorf("%s: %d %s", model, resp.StatusCode, body)
		}
		f.rec.next(t)
	}
}

// TestGemini_RefusesDuplicateMembers: a member Relay reads on a Gemini body
// that appears twice — escaped, or under the camelCase and proto names
// Gemini takes for one field — is refused before routing, on every binding
// shape: Relay would estimate one max output while the upstream acts on
// the other.
func TestGemini_RefusesDuplicateMembers(t *testing.T) {
	t.Parallel()
	f := translatedFixture(t)
	for _, c := range []struct{ name, body string }{
		{"escaped maxOutputTokens", `{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":3,"max\u004futputTokens":100000}}`},
		{"camel and snake maxOutputTokens", `{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":3,"max_output_tokens":100000}}`},
		{"camel and snake generationConfig", `{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":3},"generation_config":{"maxOutputTokens":100000}}`},
		{"escaped contents", `{"contents":[{"parts":[{"text":"hi"}]}],"cont\u0065nts":[{"parts":[{"text":"hi"}]}]}`},
	} {
		for _, shape := range shapes {
			t.Run(c.name+"/"+string(shape), func(t *testing.T) {
				resp, body := f.post("/v1beta/models/"+string(shape)+":generateContent", c.body, goog)
				gemErr(t, resp, body, 400, "INVALID_ARGUMENT")
			})
		}
	}
}
