package translator

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// Gemini callers' goldens: the same layout as the other pairs', but the
// model and the stream come from the URL path, so a case whose directory
// ends in _stream is a streamGenerateContent call.

func TestGolden_GeminiOpenAI(t *testing.T) {
	t.Parallel()
	runGeminiGolden(t, "gemini_openai", &geminiOpenAI)
}

func TestGolden_GeminiResponses(t *testing.T) {
	t.Parallel()
	runGeminiGolden(t, "gemini_responses", &geminiResponses)
}

func TestGolden_GeminiAnthropic(t *testing.T) {
	t.Parallel()
	runGeminiGolden(t, "gemini_anthropic", &geminiAnthropic)
}

// The embeddings cases: batch_* directories are batchEmbedContents calls.
func TestGolden_GeminiEmbedOpenAI(t *testing.T) {
	t.Parallel()
	runGeminiGolden(t, "gemini_embed_openai", nil)
}

func runGeminiGolden(t *testing.T, dir string, p *pairSpec) {
	t.Helper()
	cases, err := filepath.Glob(filepath.Join("testdata", "golden", dir, "*"))
	if err != nil || len(cases) == 0 {
		t.Fatalf("no golden cases for %s: %v", dir, err)
	}
	for _, c := range cases {
		p := p
		if p == nil {
			p = &geminiEmbedOpenAI
			if strings.HasPrefix(filepath.Base(c), "batch") {
				p = &geminiBatchEmbedOpenAI
			}
		}
		t.Run(filepath.Base(c), func(t *testing.T) {
			t.Parallel()
			runGeminiCase(t, p, c)
		})
	}
}

func decodeGeminiCase(t *testing.T, in wire.Inbound, body []byte, stream bool) (*Request, error) {
	t.Helper()
	req, err := Decode(in, body)
	if err != nil {
		return nil, err
	}
	req.FromPath("test-model", stream)
	return req, nil
}

func runGeminiCase(t *testing.T, p *pairSpec, dir string) {
	body := readFile(t, filepath.Join(dir, "request.json"))
	var meta caseMeta
	if b, err := os.ReadFile(filepath.Join(dir, "case.json")); err == nil {
		if err := json.Unmarshal(b, &meta); err != nil {
			t.Fatal(err)
		}
	}
	stream := strings.HasSuffix(dir, "_stream")
	req, err := decodeGeminiCase(t, p.in, body, stream)
	if err != nil {
		golden(t, filepath.Join(dir, "upstream_request.golden"), errorText(p.in, err))
		validateGeminiError(t, errorText(p.in, err))
		return
	}
	tr, err := New(req, testTarget(p, meta), testNow)
	if err != nil {
		t.Fatal(err)
	}
	up, err := tr.AppendRequest(nil)
	if err != nil {
		golden(t, filepath.Join(dir, "upstream_request.golden"), errorText(p.in, err))
		validateGeminiError(t, errorText(p.in, err))
		return
	}
	golden(t, filepath.Join(dir, "upstream_request.golden"), append([]byte("POST "+tr.Path()+"\n"), indentJSON(t, up)...))

	status, answer := upstreamAnswer(t, dir, tr, up, meta)
	out, usage := translateAnswer(t, p, req, meta, status, answer)
	golden(t, filepath.Join(dir, "response.golden"), out)
	u, _ := json.Marshal(usage)
	golden(t, filepath.Join(dir, "usage.golden"), append(u, '\n'))

	if status == http.StatusOK && isSSE(answer) && stream {
		checkSplits(t, p, req, meta, answer, out)
	}
	switch {
	case bytes.HasPrefix(out, []byte("HTTP ")):
		validateGeminiError(t, out)
	case stream:
		validateGeminiStream(t, out)
	case p.in == wire.InboundGemini:
		validateGeminiResponse(t, out)
		acceptsItsOwn(t, body, out)
	}
}

// gemAnswer is what a Gemini SDK reads from an answer.
type gemAnswer struct {
	Candidates []struct {
		Content *struct {
			Parts []gemPart `json:"parts"`
			Role  string    `json:"role"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *struct {
		PromptTokenCount     int64 `json:"promptTokenCount"`
		CandidatesTokenCount int64 `json:"candidatesTokenCount"`
		TotalTokenCount      int64 `json:"totalTokenCount"`
		ThoughtsTokenCount   int64 `json:"thoughtsTokenCount"`
	} `json:"usageMetadata"`
	ModelVersion string `json:"modelVersion"`
	Error        *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	} `json:"error"`
}

func validateGeminiResponse(t *testing.T, out []byte) {
	t.Helper()
	var a gemAnswer
	if err := json.Unmarshal(out, &a); err != nil || len(a.Candidates) != 1 || a.Candidates[0].Content == nil ||
		a.Candidates[0].FinishReason == "" || a.UsageMetadata == nil || a.ModelVersion == "" {
		t.Errorf("not a GenerateContentResponse (%v): %s", err, out)
		return
	}
	u := a.UsageMetadata
	if u.TotalTokenCount != u.PromptTokenCount+u.CandidatesTokenCount+u.ThoughtsTokenCount {
		t.Errorf("usage does not add up: %s", out)
	}
}

// validateGeminiStream checks each chunk is a data: line holding a
// GenerateContentResponse (or an error), with no empty text part, and
// that the stream ends with a finishReason or an error.
func validateGeminiStream(t *testing.T, out []byte) {
	t.Helper()
	evs := readEvents(bytes.NewReader(out))
	if len(evs) == 0 {
		t.Fatalf("empty stream")
	}
	for i, ev := range evs {
		if ev[1] != "" {
			t.Errorf("event %d has a name: %q", i, ev[1])
		}
		var a gemAnswer
		if err := json.Unmarshal([]byte(ev[2]), &a); err != nil {
			t.Fatalf("chunk %d: %v: %s", i, err, ev[2])
		}
		last := i == len(evs)-1
		switch {
		case a.Error != nil:
			if !last || a.Error.Status == "" || a.Error.Code == 0 {
				t.Errorf("chunk %d: error %s", i, ev[2])
			}
		case len(a.Candidates) != 1:
			t.Errorf("chunk %d has no candidate: %s", i, ev[2])
		case last && (a.Candidates[0].FinishReason == "" || a.UsageMetadata == nil):
			t.Errorf("the last chunk lacks finishReason or usage: %s", ev[2])
		case a.Candidates[0].Content == nil || len(a.Candidates[0].Content.Parts) == 0:
			// @google/genai's chat forgets a streamed turn (and the question
			// before it) when one chunk has no content.
			t.Errorf("chunk %d has no content: %s", i, ev[2])
		case !last:
			for _, p := range a.Candidates[0].Content.Parts {
				if p == (gemPart{}) {
					t.Errorf("chunk %d has an empty part: %s", i, ev[2])
				}
			}
		}
	}
}

func validateGeminiError(t *testing.T, out []byte) {
	t.Helper()
	_, body, _ := bytes.Cut(out, []byte("\n"))
	var a gemAnswer
	if err := json.Unmarshal(body, &a); err != nil || a.Error == nil || a.Error.Code < 400 || a.Error.Status == "" || a.Error.Message == "" {
		t.Errorf("not a Gemini error (%v): %s", err, out)
	}
}

// acceptsItsOwn sends the answer's content back as the next turn, as the
// SDKs' chats do: Relay must accept what it emitted.
func acceptsItsOwn(t *testing.T, body, out []byte) {
	t.Helper()
	var q map[string]json.RawMessage
	var a struct {
		Candidates []struct {
			Content json.RawMessage `json:"content"`
		} `json:"candidates"`
	}
	if json.Unmarshal(body, &q) != nil || json.Unmarshal(out, &a) != nil {
		t.Fatal("unreadable")
	}
	var contents []json.RawMessage
	_ = json.Unmarshal(q["contents"], &contents)
	contents = append(contents, a.Candidates[0].Content, json.RawMessage(`{"role":"user","parts":[{"text":"and then?"}]}`))
	// Answer every function call the way the SDK examples do.
	var c gemContent
	_ = json.Unmarshal(a.Candidates[0].Content, &c)
	var results []gemPart
	for _, p := range c.Parts {
		if p.FunctionCall != nil {
			results = append(results, gemPart{FunctionResponse: &gemFunctionResponse{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Response: json.RawMessage(`{"output":"ok"}`)}})
		}
	}
	if len(results) > 0 {
		b, _ := json.Marshal(gemContent{Role: "user", Parts: results})
		contents[len(contents)-1] = b
	}
	q["contents"], _ = json.Marshal(contents)
	next, _ := json.Marshal(q)
	if _, err := Decode(wire.InboundGemini, next); err != nil {
		t.Errorf("Relay refuses its own answer sent back: %v\n%s", err, next)
	}
}

func TestDecodeGemini_Refusals(t *testing.T) {
	t.Parallel()
	user := `"contents":[{"role":"user","parts":[{"text":"hi"}]}]`
	for _, c := range []struct {
		name, body, param string
		kind              error
	}{
		{"no contents", `{}`, "contents", wire.ErrMalformedRequest},
		{"bad role", `{"contents":[{"role":"system","parts":[{"text":"x"}]}]}`, "contents[0].role", wire.ErrMalformedRequest},
		{"candidates", `{` + user + `,"generationConfig":{"candidateCount":3}}`, "generationConfig.candidateCount", wire.ErrUnsupportedFeature},
		{"cached", `{` + user + `,"cachedContent":"cachedContents/x"}`, "cachedContent", wire.ErrUnsupportedFeature},
		{"unknown field", `{` + user + `,"bogus":1}`, "bogus", wire.ErrUnsupportedFeature},
		{"orphan response", `{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]}`, "contents[0].parts[0].functionResponse", wire.ErrMalformedRequest},
		{"two kinds in a part", `{"contents":[{"parts":[{"text":"a","inlineData":{"mimeType":"image/png","data":"AA=="}}]}]}`, "contents[0].parts[0]", wire.ErrMalformedRequest},
		{"audio modality", `{` + user + `,"generationConfig":{"responseModalities":["AUDIO"]}}`, "generationConfig.responseModalities", wire.ErrUnsupportedFeature},
		{"schema without json", `{` + user + `,"generationConfig":{"responseSchema":{"type":"OBJECT"}}}`, "generationConfig.responseMimeType", wire.ErrMalformedRequest},
		{"bad mode", `{` + user + `,"tools":[{"functionDeclarations":[{"name":"f"}]}],"toolConfig":{"functionCallingConfig":{"mode":"SOMETIMES"}}}`, "toolConfig.functionCallingConfig.mode", wire.ErrMalformedRequest},
		{"file uri", `{"contents":[{"parts":[{"fileData":{"mimeType":"application/pdf","fileUri":"https://generativelanguage.googleapis.com/v1beta/files/x"}}]}]}`, "contents[0].parts[0].fileData", wire.ErrUnsupportedFeature},
		{"trailing data", `{` + user + `} {}`, "", wire.ErrMalformedRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(wire.InboundGemini, []byte(c.body))
			var we *wire.Error
			if !errors.As(err, &we) || !errors.Is(err, c.kind) || we.Param != c.param {
				t.Fatalf("got %v (%#v), want %v on %q", err, we, c.kind, c.param)
			}
		})
	}
}

// Function responses without ids answer the earliest open call of their
// function; the ids Relay mints are stable across turns.
func TestDecodeGemini_PairsResponsesWithCalls(t *testing.T) {
	t.Parallel()
	body := `{"contents":[{"role":"user","parts":[{"text":"go"}]},
	 {"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":1}}},{"functionCall":{"name":"f","args":{"a":2}}},{"functionCall":{"id":"own","name":"g"}}]},
	 {"role":"user","parts":[{"functionResponse":{"id":"own","name":"g","response":{"x":1}}},{"functionResponse":{"name":"f","response":{"output":"one"}}},{"functionResponse":{"name":"f","response":{"error":"two"}}}]}]}`
	req, err := Decode(wire.InboundGemini, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	m := req.C.Messages
	if len(m) != 3 || m[1].Role != canonical.RoleAssistant || m[2].Role != canonical.RoleTool {
		t.Fatalf("messages: %+v", m)
	}
	calls, results := m[1].Parts, m[2].Parts
	want := []struct {
		call    int
		text    string
		isError bool
	}{{2, `{"x":1}`, false}, {0, "one", false}, {1, "two", true}}
	for i, w := range want {
		r := results[i].ToolResult
		if r.CallID != calls[w.call].ToolCall.ID || r.Content[0].Text != w.text || r.IsError != w.isError {
			t.Errorf("result %d: %+v, want call %q %q", i, r, calls[w.call].ToolCall.ID, w.text)
		}
	}
	again, _ := Decode(wire.InboundGemini, []byte(body))
	if again.C.Messages[1].Parts[0].ToolCall.ID != calls[0].ToolCall.ID {
		t.Errorf("minted ids differ between decodes")
	}
}

// geminiSamples are Gemini callers' bodies that each use one feature (the
// support matrix's test; the model and stream are in the path).
var geminiSamples = map[Feature]string{
	FeatSystem:          `"systemInstruction":{"parts":[{"text":"s"}]},` + gemHi,
	FeatSameRoleTurns:   `"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"user","parts":[{"text":"again"}]}]`,
	FeatImageBase64:     `"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"image/png","data":"` + png1x1 + `"}}]}]`,
	FeatImageURL:        `"contents":[{"role":"user","parts":[{"fileData":{"mimeType":"image/png","fileUri":"https://example.com/a.png"}}]}]`,
	FeatAudioInput:      `"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"audio/wav","data":"AAAA"}}]}]`,
	FeatFileInput:       `"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"application/pdf","data":"JVBERi0="}}]}]`,
	FeatTools:           gemHi + `,` + gemFuncTool,
	FeatToolChoice:      gemHi + `,` + gemFuncTool + `,"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["f"]}}`,
	FeatToolHistory:     `"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"ok"}}}]}],` + gemFuncTool,
	FeatToolResultError: `"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"error":"boom"}}}]}],` + gemFuncTool,
	FeatThinkingHistory: `"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"t","thought":true,"thoughtSignature":"anthropic:sig"},{"text":"yo"}]},{"role":"user","parts":[{"text":"go"}]}]`,
	FeatReasoning:       gemHi + `,"generationConfig":{"thinkingConfig":{"thinkingBudget":2048,"includeThoughts":true}}`,
	FeatMaxTokens:       gemHi + `,"generationConfig":{"maxOutputTokens":100}`,
	FeatTemperature:     gemHi + `,"generationConfig":{"temperature":0.5}`,
	FeatTopP:            gemHi + `,"generationConfig":{"topP":0.9}`,
	FeatTopK:            gemHi + `,"generationConfig":{"topK":5}`,
	FeatStop:            gemHi + `,"generationConfig":{"stopSequences":["x"]}`,
	FeatSeed:            gemHi + `,"generationConfig":{"seed":7}`,
	FeatPenalties:       gemHi + `,"generationConfig":{"presencePenalty":0.5}`,
	FeatJSONObject:      gemHi + `,"generationConfig":{"responseMimeType":"application/json"}`,
	FeatJSONSchema:      gemHi + `,"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"object"}}`,
	FeatPrefill:         `"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"Well,"}]}]`,
	FeatStreaming:       gemHi,
}

const (
	gemHi       = `"contents":[{"role":"user","parts":[{"text":"hi"}]}]`
	gemFuncTool = `"tools":[{"functionDeclarations":[{"name":"f","parameters":{"type":"OBJECT"}}]}]`
)

// FuzzDecodeGeminiRequest: no body makes the Gemini decoder or an encoder
// of any binding shape panic; garbage is a 400.
func FuzzDecodeGeminiRequest(f *testing.F) {
	seedFiles(f, "gemini_*/*/request.json", func(b []byte) { f.Add(b) })
	for _, s := range geminiSamples {
		f.Add([]byte(`{` + s + `}`))
	}
	f.Add([]byte(`{"contents":[{"role":"model","parts":[{"thoughtSignature":"anthropic-redacted:x"}]}]}`))
	f.Add([]byte(`{"contents":[{"parts":[{"functionResponse":{"name":"f","response":[]}}]}]}`))
	f.Add([]byte(`{"contents":[{"parts":[{"text":"a"}]}],"generationConfig":{"responseMimeType":"application/json","responseSchema":{"type":"ARRAY","items":{"anyOf":[{"type":"STRING","nullable":true}]},"minItems":"2"}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, in := range []wire.Inbound{wire.InboundGemini, wire.InboundGeminiEmbed, wire.InboundGeminiBatchEmbed} {
			req, err := Decode(in, body)
			if err != nil {
				requestError(t, err)
				continue
			}
			for _, stream := range []bool{false, true} {
				req.FromPath("m", stream && in == wire.InboundGemini)
				for _, up := range []wire.Shape{wire.ShapeOpenAI, wire.ShapeOpenAIResponses, wire.ShapeAnthropic} {
					tr, err := New(req, Target{Shape: up, Model: "m", UpstreamModel: "u", Host: "h"}, testNow)
					if err != nil {
						continue // embeddings: openai only
					}
					if _, err := tr.AppendRequest(nil); err != nil {
						requestError(t, err)
					}
				}
			}
		}
	})
}

// BenchmarkGeminiCaller measures the Gemini caller pairs as bench_test.go
// measures the others: decoding and encoding a request (tool_results),
// translating a whole answer (any_tool) and one stream event
// (any_tool_stream; b.N counts events).
func BenchmarkGeminiCaller(b *testing.B) {
	for _, p := range []*pairSpec{&geminiOpenAI, &geminiResponses, &geminiAnthropic} {
		dir := strings.ReplaceAll(p.name, "→", "_")
		body := benchFile(b, dir, "tool_results", "request.json")
		b.Run("request/"+dir, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			var dst []byte
			for b.Loop() {
				req, err := Decode(p.in, body)
				if err != nil {
					b.Fatal(err)
				}
				req.FromPath("m", false)
				tr, _ := New(req, Target{Shape: p.up, UpstreamModel: "up-model"}, testNow)
				if dst, err = tr.AppendRequest(dst[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
		req, err := Decode(p.in, benchFile(b, dir, "any_tool", "request.json"))
		if err != nil {
			b.Fatal(err)
		}
		req.FromPath("m", false)
		answer := benchFile(b, dir, "any_tool", "upstream.body")
		b.Run("response/"+dir, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(answer)))
			var dst []byte
			for b.Loop() {
				tr, _ := New(req, Target{Shape: p.up}, testNow)
				if dst, err = tr.AppendResponse(dst[:0], answer); err != nil {
					b.Fatal(err)
				}
			}
		})
		sreq, err := Decode(p.in, benchFile(b, dir, "any_tool_stream", "request.json"))
		if err != nil {
			b.Fatal(err)
		}
		sreq.FromPath("m", true)
		evs := streamEvents(b, benchFile(b, dir, "any_tool_stream", "upstream.body"))
		b.Run("stream_event/"+dir, func(b *testing.B) {
			b.ReportAllocs()
			var dst []byte
			var tr *Translator
			i := len(evs)
			for b.Loop() {
				if i == len(evs) {
					tr, _ = New(sreq, Target{Shape: p.up}, testNow)
					i = 0
				}
				dst, _ = tr.AppendEvent(dst[:0], evs[i])
				i++
			}
		})
	}
}

// Google's REST examples spell fields as proto names; Relay reads them,
// and leaves the caller's own JSON (arguments, schemas) as it is.
func TestDecodeGemini_SnakeCase(t *testing.T) {
	t.Parallel()
	snake := `{"system_instruction":{"parts":[{"text":"s"}]},"contents":[{"role":"user","parts":[{"inline_data":{"mime_type":"image/png","data":"` + png1x1 + `"}}]},
	 {"role":"model","parts":[{"function_call":{"name":"f","args":{"snake_arg":1}}}]},{"role":"user","parts":[{"function_response":{"name":"f","response":{"out_put":"x"}}}]}],
	 "tools":[{"function_declarations":[{"name":"f","parameters":{"type":"OBJECT","properties":{"snake_arg":{"type":"INTEGER"}}}}]}],
	 "generation_config":{"max_output_tokens":9,"stop_sequences":["z"]}}`
	req, err := Decode(wire.InboundGemini, []byte(snake))
	if err != nil {
		t.Fatal(err)
	}
	c := &req.C
	if len(c.System) != 1 || c.Messages[0].Parts[0].Image == nil || c.Messages[1].Parts[0].ToolCall.Arguments != `{"snake_arg":1}` ||
		c.Messages[2].Parts[0].ToolResult.Content[0].Text != `{"out_put":"x"}` || !bytes.Contains(c.Tools[0].Parameters, []byte("snake_arg")) ||
		*c.MaxOutputTokens != 9 || c.Stop[0] != "z" {
		t.Errorf("decoded %+v", c)
	}
	if _, err := Decode(wire.InboundGemini, []byte(`{"contents":[{"parts":[{"text":"x"}]}],"no_such_field":1}`)); err == nil {
		t.Error("an unknown snake_case field was accepted")
	}
}
