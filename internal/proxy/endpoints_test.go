package proxy_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/wire"
)

// endpointsFixture has one openai host with two keys (the first failing
// with the fault header's status when a test sends one for it) and a model
// of each kind bound to it.
func endpointsFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	oa := f.host("openai")
	f.key(oa, "oa-1", openaiSecret)
	kinds := map[string][2]string{
		"instruct": {"chat", "gpt-3.5-turbo-instruct"},
		"painter":  {"image", "gpt-image-1"},
		"speaker":  {"audio", "gpt-4o-mini-tts"},
		"scribe":   {"audio", "gpt-4o-transcribe"},
		"guard":    {"moderation", "omni-moderation-latest"},
		"ranker":   {"rerank", "rerank-v3.5"},
	}
	for name, k := range kinds {
		m := f.model(name, true)
		m.Kind = k[0]
		f.bind(m, oa, wire.ShapeOpenAI, k[1])
	}
	an := f.host("anthropic")
	f.key(an, "an-1", anthropicSecret)
	m := f.model("claude-painter", true)
	m.Kind = "image"
	f.bind(m, an, wire.ShapeAnthropic, "claude-sonnet")
	f.model("ungranted-painter", false).Kind = "image"
	return f
}

// Every JSON endpoint beyond chat through openai-go with only the base URL
// changed: served by the binding's upstream model, usage recorded.
func TestEndpoints_ThroughOpenAISDK(t *testing.T) {
	t.Parallel()
	f := endpointsFixture(t)
	f.start()
	c := f.openai()
	ctx := t.Context()

	t.Run("completions", func(t *testing.T) {
		got, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: "instruct", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Say hi")}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(got.Choices[0].Text, "Hello from gpt-3.5-turbo-instruct") {
			t.Fatalf("completion = %s", got.RawJSON())
		}
		rec := f.rec.next(t)
		if rec.Inbound != "openai_completions" || rec.Status != 200 || rec.Usage.Input != got.Usage.PromptTokens || rec.Usage.Output != got.Usage.CompletionTokens || rec.Usage.Output == 0 {
			t.Fatalf("record %+v, usage %+v", rec, got.Usage)
		}
		// Streamed, without asking for usage: Relay asks for it and keeps
		// the usage-only chunk from the caller.
		s := c.Completions.NewStreaming(ctx, openai.CompletionNewParams{Model: "instruct", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Say hi")}})
		var text strings.Builder
		for s.Next() {
			ch := s.Current()
			if len(ch.Choices) == 0 {
				t.Fatalf("the usage-only chunk reached the caller: %s", ch.RawJSON())
			}
			text.WriteString(ch.Choices[0].Text)
		}
		if err := s.Err(); err != nil || text.String() != got.Choices[0].Text {
			t.Fatalf("stream %q, %v", text.String(), err)
		}
		rec = f.rec.next(t)
		if !rec.Stream || rec.Usage.Output != got.Usage.CompletionTokens {
			t.Fatalf("stream record %+v", rec)
		}
	})
	t.Run("images", func(t *testing.T) {
		got, err := c.Images.Generate(ctx, openai.ImageGenerateParams{Model: "painter", Prompt: "a cat", Quality: "low"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Data) != 1 || got.Usage.OutputTokens != 272 {
			t.Fatalf("images = %s", got.RawJSON())
		}
		up := f.waitFor(func(r mockupstream.Request) bool { return r.Path == "/v1/images/generations" })
		if up.Model != "gpt-image-1" || up.Header.Get("Authorization") != "Bearer "+openaiSecret {
			t.Fatalf("upstream model %s, authorization sent: %v", up.Model, up.Header.Get("Authorization") != "")
		}
		rec := f.rec.next(t)
		if rec.Inbound != "openai_images" || rec.Usage.Output != 272 || rec.Usage.Input != got.Usage.InputTokens {
			t.Fatalf("record %+v", rec)
		}
	})
	t.Run("speech", func(t *testing.T) {
		resp, err := c.Audio.Speech.New(ctx, openai.AudioSpeechNewParams{Model: "speaker", Input: "Hello there", Voice: openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String("alloy")}})
		if err != nil {
			t.Fatal(err)
		}
		audio, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.Header.Get("Content-Type") != "audio/mpeg" || len(audio) != len("Hello there")*256 || string(audio[:2]) != "\xff\xfb" {
			t.Fatalf("speech %s, %d bytes, %v", resp.Header.Get("Content-Type"), len(audio), err)
		}
		if rec := f.rec.next(t); rec.Inbound != "openai_speech" || rec.Status != 200 {
			t.Fatalf("record %+v", rec)
		}
	})
	t.Run("moderations", func(t *testing.T) {
		got, err := c.Moderations.New(ctx, openai.ModerationNewParams{Model: "guard", Input: openai.ModerationNewParamsInputUnion{OfString: openai.String("I will kill the process")}})
		if err != nil || len(got.Results) != 1 || !got.Results[0].Flagged || got.Model != "omni-moderation-latest" {
			t.Fatalf("moderation %v %v", got, err)
		}
		if rec := f.rec.next(t); rec.Inbound != "openai_moderations" || rec.Model != "guard" {
			t.Fatalf("record %+v", rec)
		}
	})
	t.Run("rerank", func(t *testing.T) {
		resp, body := f.post("/v1/rerank", `{"model":"ranker","query":"blue cat","documents":["red dog","blue cat"]}`, nil)
		if resp.StatusCode != 200 || !strings.Contains(body, `"index":1,"relevance_score":1`) {
			t.Fatalf("rerank %d %s", resp.StatusCode, body)
		}
		if rec := f.rec.next(t); rec.Inbound != "rerank" || rec.Status != 200 {
			t.Fatalf("record %+v", rec)
		}
	})
}

// What these endpoints refuse, each in OpenAI's error shape.
func TestEndpoints_Refusals(t *testing.T) {
	t.Parallel()
	f := endpointsFixture(t)
	f.start()
	c := f.openai()
	ctx := t.Context()
	status := func(err error) (int, string, string) {
		var e *openai.Error
		if !errors.As(err, &e) {
			t.Fatalf("not an API error: %v", err)
		}
		return e.StatusCode, e.Code, e.Message
	}

	// A model of another kind.
	_, err := c.Images.Generate(ctx, openai.ImageGenerateParams{Model: "instruct", Prompt: "a cat"})
	if st, code, msg := status(err); st != 400 || code != "unsupported_feature" || !strings.Contains(msg, "instruct") {
		t.Errorf("chat model for images: %d %s %s", st, code, msg)
	}
	_, err = c.Completions.New(ctx, openai.CompletionNewParams{Model: "painter", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("x")}})
	if st, code, _ := status(err); st != 400 || code != "unsupported_feature" {
		t.Errorf("image model for completions: %d %s", st, code)
	}
	// Only a binding of another shape.
	_, err = c.Images.Generate(ctx, openai.ImageGenerateParams{Model: "claude-painter", Prompt: "a cat"})
	if st, code, msg := status(err); st != 400 || code != "shape_not_supported" {
		t.Errorf("anthropic binding for images: %d %s %s", st, code, msg)
	}
	// Not granted: as if it did not exist.
	_, err = c.Images.Generate(ctx, openai.ImageGenerateParams{Model: "ungranted-painter", Prompt: "a cat"})
	if st, _, _ := status(err); st != 404 {
		t.Errorf("ungranted: %d", st)
	}
	// No relay key.
	resp, body := f.post("/v1/moderations", `{"model":"guard","input":"x"}`, map[string]string{"Authorization": ""})
	if resp.StatusCode != 401 || decodeError(t, body).Error.Type == "" {
		t.Errorf("no key: %d %s", resp.StatusCode, body)
	}
	// GET is not the method.
	resp, _ = f.do(http.MethodGet, "/v1/images/generations", "", nil)
	if resp.StatusCode != 405 {
		t.Errorf("GET: %d", resp.StatusCode)
	}
	// The upstream's own 400 comes back unchanged.
	resp, body = f.post("/v1/rerank", `{"model":"ranker","query":"q"}`, nil)
	if resp.StatusCode != 400 || !strings.Contains(body, "documents") {
		t.Errorf("upstream 400: %d %s", resp.StatusCode, body)
	}
}

// A failing host key fails over to the next, as chat does.
func TestEndpoints_FailOver(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	oa := f.host("openai")
	f.key(oa, "oa-bad", "sk-up-fault-503-key")
	good := f.key(oa, "oa-good", openaiSecret)
	m := f.model("painter", true)
	m.Kind = "image"
	f.bind(m, oa, wire.ShapeOpenAI, "gpt-image-1")
	f.start()
	got, err := f.openai().Images.Generate(t.Context(), openai.ImageGenerateParams{Model: "painter", Prompt: "a cat"})
	if err != nil || len(got.Data) != 1 {
		t.Fatalf("images %v", err)
	}
	rec := f.rec.next(t)
	if rec.Attempts != 2 || rec.HostKeyID != good.ID {
		t.Fatalf("attempts %d, key %v (want %v)", rec.Attempts, rec.HostKeyID, good.ID)
	}
}
