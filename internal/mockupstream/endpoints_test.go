package mockupstream_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/relay-llm/relay/internal/mockupstream"
)

// pngBytes is a 1×1 PNG, what image uploads send.
func pngBytes(t *testing.T) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func endpointClient(b bundle) openai.Client {
	return openai.NewClient(option.WithBaseURL(b.srv.URL+"/v1"), option.WithAPIKey("sk-mock"), option.WithMaxRetries(0))
}

// The endpoints beyond chat, held to openai-go as their client.
func TestEndpoints_OpenAISDK(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	c := endpointClient(b)
	ctx := ctx(t)

	t.Run("completions", func(t *testing.T) {
		got, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: "gpt-3.5-turbo-instruct", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Say hi")}})
		if err != nil {
			t.Fatal(err)
		}
		if got.Object != "text_completion" || !strings.Contains(got.Choices[0].Text, "You said: Say hi") || got.Usage.PromptTokens == 0 || got.Usage.CompletionTokens == 0 {
			t.Fatalf("completion = %+v", got)
		}
		s := c.Completions.NewStreaming(ctx, openai.CompletionNewParams{Model: "gpt-3.5-turbo-instruct", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Say hi")},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
		var text strings.Builder
		var usage int64
		for s.Next() {
			ch := s.Current()
			for _, x := range ch.Choices {
				text.WriteString(x.Text)
			}
			usage += ch.Usage.CompletionTokens
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if text.String() != got.Choices[0].Text || usage != got.Usage.CompletionTokens {
			t.Fatalf("stream = %q (usage %d), want %q (%d)", text.String(), usage, got.Choices[0].Text, got.Usage.CompletionTokens)
		}
	})
	t.Run("images", func(t *testing.T) {
		got, err := c.Images.Generate(ctx, openai.ImageGenerateParams{Model: "gpt-image-1", Prompt: "a cat", Quality: "low", N: openai.Int(2)})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Data) != 2 || got.Data[0].B64JSON == "" || got.Usage.OutputTokens != 2*272 || got.Usage.InputTokens == 0 {
			t.Fatalf("generate = %+v", got)
		}
		edit, err := c.Images.Edit(ctx, openai.ImageEditParams{Model: "gpt-image-1", Prompt: "add a hat",
			Image: openai.ImageEditParamsImageUnion{OfFile: openai.File(bytes.NewReader(pngBytes(t)), "cat.png", "image/png")}})
		if err != nil {
			t.Fatal(err)
		}
		if len(edit.Data) != 1 || edit.Usage.InputTokensDetails.ImageTokens != 65 {
			t.Fatalf("edit = %+v", edit)
		}
		//lint:ignore SA1019 OpenAI still serves the endpoint, and Relay with it
		v, err := c.Images.NewVariation(ctx, openai.ImageNewVariationParams{Model: "dall-e-2", Image: openai.File(bytes.NewReader(pngBytes(t)), "cat.png", "image/png")})
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Data) != 1 || v.Usage.TotalTokens != 0 {
			t.Fatalf("variation = %+v", v)
		}
		_, err = c.Images.Edit(ctx, openai.ImageEditParams{Model: "gpt-image-1", Prompt: "x",
			Image: openai.ImageEditParamsImageUnion{OfFile: openai.File(strings.NewReader("not an image"), "a.txt", "text/plain")}})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "invalid_image_format" {
			t.Fatalf("a text file as the image: %v", err)
		}
	})
	t.Run("audio", func(t *testing.T) {
		resp, err := c.Audio.Speech.New(ctx, openai.AudioSpeechNewParams{Model: "gpt-4o-mini-tts", Input: "Hello", Voice: openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String("alloy")}})
		if err != nil {
			t.Fatal(err)
		}
		audio, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.Header.Get("Content-Type") != "audio/mpeg" || len(audio) != 5*256 {
			t.Fatalf("speech: %s, %d bytes", resp.Header.Get("Content-Type"), len(audio))
		}
		tr, err := c.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{Model: "gpt-4o-transcribe", File: openai.File(bytes.NewReader(make([]byte, 4096)), "a.mp3", "audio/mpeg")})
		if err != nil {
			t.Fatal(err)
		}
		if tr.Text != "Mock transcription of 4096 bytes of audio." || tr.Usage.InputTokens != 4 {
			t.Fatalf("transcription = %+v", tr)
		}
		//lint:ignore SA1019 OpenAI still serves the endpoint, and Relay with it
		tl, err := c.Audio.Translations.New(ctx, openai.AudioTranslationNewParams{Model: "whisper-1", File: openai.File(bytes.NewReader(make([]byte, 100)), "a.mp3", "audio/mpeg")})
		if err != nil {
			t.Fatal(err)
		}
		if tl.Text != "Mock translation of 100 bytes of audio." {
			t.Fatalf("translation = %+v", tl)
		}
	})
	t.Run("moderations", func(t *testing.T) {
		got, err := c.Moderations.New(ctx, openai.ModerationNewParams{Model: "omni-moderation-latest", Input: openai.ModerationNewParamsInputUnion{OfStringArray: []string{"hello", "I will kill it"}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Results) != 2 || got.Results[0].Flagged || !got.Results[1].Flagged || !got.Results[1].Categories.Violence {
			t.Fatalf("moderation = %+v", got)
		}
	})
	t.Run("rerank", func(t *testing.T) {
		resp, body := post(t, b.srv.URL+"/v1/rerank", map[string]string{"Authorization": "Bearer sk-mock"},
			`{"model":"rerank-v3.5","query":"blue cat","documents":["a red dog","a blue cat","blue sky"],"top_n":2}`)
		var got struct {
			Results []struct {
				Index          int     `json:"index"`
				RelevanceScore float64 `json:"relevance_score"`
			} `json:"results"`
			Usage struct {
				TotalTokens int64 `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		if len(got.Results) != 2 || got.Results[0].Index != 1 || got.Results[0].RelevanceScore != 1 || got.Usage.TotalTokens == 0 {
			t.Fatalf("rerank = %s", body)
		}
	})
	t.Run("errors", func(t *testing.T) {
		bad := openai.NewClient(option.WithBaseURL(b.srv.URL+"/v1"), option.WithAPIKey(""), option.WithMaxRetries(0))
		_, err := bad.Moderations.New(ctx, openai.ModerationNewParams{Input: openai.ModerationNewParamsInputUnion{OfString: openai.String("x")}})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
			t.Fatalf("no key: %v", err)
		}
		_, err = c.Completions.New(ctx, openai.CompletionNewParams{Model: "m"})
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "prompt" {
			t.Fatalf("no prompt: %v", err)
		}
	})
}
