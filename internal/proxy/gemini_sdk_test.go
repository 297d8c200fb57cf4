package proxy_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/wire"
	"google.golang.org/genai"
)

// Google's official Go SDK (google.golang.org/genai) pointed at Relay is
// the judge of Gemini wire compatibility, on every binding shape: plain
// and streamed generation, a multi-turn chat with a function call and its
// response pushed back the way the SDK's Chat does it, token counting and
// the model list.

func genaiClient(t *testing.T, f *fixture, base string) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(t.Context(), &genai.ClientConfig{
		APIKey: relayKey, Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: f.srv.URL + base},
		HTTPClient:  http.DefaultClient,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGemini_GoSDK(t *testing.T) {
	t.Parallel()
	f := translatedFixture(t)
	c := genaiClient(t, f, "/")
	ctx := t.Context()
	weather := &genai.Tool{FunctionDeclarations: []*genai.FunctionDeclaration{{
		Name: "get_weather", Description: "Weather for a city",
		Parameters: &genai.Schema{Type: genai.TypeObject, Properties: map[string]*genai.Schema{"city": {Type: genai.TypeString}}, Required: []string{"city"}},
	}}}
	for _, shape := range shapes {
		model := string(shape)
		t.Run(model, func(t *testing.T) {
			cfg := &genai.GenerateContentConfig{
				SystemInstruction: genai.NewContentFromText("Be brief.", genai.RoleUser),
				MaxOutputTokens:   256,
			}
			resp, err := c.Models.GenerateContent(ctx, model, genai.Text("Hello there, relay friend"), cfg)
			if err != nil {
				t.Fatalf("generate: %v", err)
			}
			if resp.Text() == "" || resp.UsageMetadata == nil || resp.UsageMetadata.TotalTokenCount == 0 || resp.Candidates[0].FinishReason != genai.FinishReasonStop {
				t.Errorf("generate: %+v", resp)
			}
			f.rec.next(t)

			var text strings.Builder
			var last *genai.GenerateContentResponse
			for chunk, err := range c.Models.GenerateContentStream(ctx, model, genai.Text("Hello there, relay friend"), cfg) {
				if err != nil {
					t.Fatalf("stream: %v", err)
				}
				text.WriteString(chunk.Text())
				last = chunk
			}
			if text.Len() == 0 || last == nil || last.UsageMetadata == nil || last.Candidates[0].FinishReason != genai.FinishReasonStop {
				t.Errorf("stream: %q, last %+v", text.String(), last)
			}
			f.rec.next(t)

			chat, err := c.Chats.Create(ctx, model, &genai.GenerateContentConfig{Tools: []*genai.Tool{weather}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			r1, err := chat.SendMessage(ctx, *genai.NewPartFromText("What is the weather in Paris?"))
			if err != nil {
				t.Fatalf("chat turn 1: %v", err)
			}
			calls := r1.FunctionCalls()
			if len(calls) != 1 || calls[0].Name != "get_weather" || calls[0].Args["city"] == nil {
				t.Fatalf("chat turn 1: %+v", r1.Candidates[0].Content)
			}
			f.rec.next(t)
			answer := genai.NewPartFromFunctionResponse("get_weather", map[string]any{"output": "18C and sunny"})
			answer.FunctionResponse.ID = calls[0].ID
			r2, err := chat.SendMessage(ctx, *answer)
			if err != nil {
				t.Fatalf("chat turn 2: %v", err)
			}
			if !strings.Contains(r2.Text(), "18C") {
				t.Errorf("chat turn 2: %q", r2.Text())
			}
			f.rec.next(t)
			if _, err := chat.SendMessage(ctx, *genai.NewPartFromText("Thanks, and tomorrow?")); err != nil {
				t.Fatalf("chat turn 3: %v", err)
			}
			f.rec.next(t)
			if n := len(chat.History(false)); n != 6 {
				t.Errorf("chat history has %d contents, want 6", n)
			}

			n, err := c.Models.CountTokens(ctx, model, genai.Text("count these tokens"), nil)
			if shape == wire.ShapeGemini {
				if err != nil || n.TotalTokens == 0 {
					t.Errorf("countTokens: %v %+v", err, n)
				}
			} else {
				var apiErr genai.APIError
				if !asAPIError(err, &apiErr) || apiErr.Code != 400 || apiErr.Status != "INVALID_ARGUMENT" {
					t.Errorf("countTokens on %s: %v", shape, err)
				}
			}
			f.rec.next(t)
		})
	}
	t.Run("errors and models", func(t *testing.T) {
		_, err := c.Models.GenerateContent(ctx, "no-such-model", genai.Text("hi"), nil)
		var apiErr genai.APIError
		if !asAPIError(err, &apiErr) || apiErr.Code != 404 || apiErr.Status != "NOT_FOUND" {
			t.Errorf("unknown model: %v", err)
		}
		page, err := genaiClient(t, f, "/gemini/").Models.List(ctx, nil)
		if err != nil || len(page.Items) != 12 || !strings.HasPrefix(page.Items[0].Name, "models/") {
			t.Errorf("list: %v %+v", err, page)
		}
		m, err := c.Models.Get(ctx, "anthropic", nil)
		if err != nil || m.Name != "models/anthropic" {
			t.Errorf("get: %v %+v", err, m)
		}
	})
}

func asAPIError(err error, target *genai.APIError) bool {
	switch e := err.(type) {
	case genai.APIError:
		*target = e
		return true
	case *genai.APIError:
		*target = *e
		return true
	}
	return false
}
