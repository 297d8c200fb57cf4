package mockupstream

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// completionsRequest is OpenAI's legacy completions body, what the mock reads of it.
type completionsRequest struct {
	Model         string          `json:"model"`
	Prompt        json.RawMessage `json:"prompt"`
	MaxTokens     *int            `json:"max_tokens"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type completionChoice struct {
	Text         string  `json:"text"`
	Index        int     `json:"index"`
	Logprobs     any     `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
}

type completionChunk struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *openAIUsageShort  `json:"usage,omitempty"`
}

type openAIUsageShort struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// serveCompletions answers POST /v1/completions: "Hello from <model>. You
// said: <prompt>" a word a chunk when streamed; the prompt's tokens are
// bytes/4, the output's its words, cut at max_tokens (finish "length").
func serveCompletions(s *Server, w http.ResponseWriter, r *http.Request, x *exchange) *apiError {
	var req completionsRequest
	if e := readJSON(r, x, &req); e != nil {
		return e
	}
	x.model, x.stream = req.Model, req.Stream
	if req.Model == "" {
		return missing("model")
	}
	var prompt string
	var many []string
	switch {
	case len(req.Prompt) == 0 || string(req.Prompt) == "null":
		return missing("prompt")
	case json.Unmarshal(req.Prompt, &prompt) == nil:
	case json.Unmarshal(req.Prompt, &many) == nil:
		prompt = strings.Join(many, " ")
	default:
		return &apiError{kind: errInvalid, msg: "'$.prompt' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.", param: "prompt"}
	}
	words := strings.Fields("Hello from " + req.Model + ". You said: " + snippet(prompt))
	finish := "stop"
	if req.MaxTokens != nil && *req.MaxTokens >= 0 && *req.MaxTokens < len(words) {
		words, finish = words[:*req.MaxTokens], "length"
	}
	usage := &openAIUsageShort{PromptTokens: textTokens(prompt), CompletionTokens: int64(len(words))}
	usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
	id, created := randomID("cmpl-", 29, alphaBase62), time.Now().Unix()
	if !req.Stream {
		writeJSON(w, completionChunk{ID: id, Object: "text_completion", Created: created, Model: req.Model,
			Choices: []completionChoice{{Text: strings.Join(words, " "), FinishReason: &finish}}, Usage: usage})
		return nil
	}
	sse := newSSE(w)
	for i, word := range words {
		if i > 0 {
			word = " " + word
		}
		sse.data(completionChunk{ID: id, Object: "text_completion", Created: created, Model: req.Model, Choices: []completionChoice{{Text: word}}})
		if d := s.opts.ChunkDelay; d > 0 {
			time.Sleep(d)
		}
	}
	sse.data(completionChunk{ID: id, Object: "text_completion", Created: created, Model: req.Model, Choices: []completionChoice{{FinishReason: &finish}}})
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		sse.data(completionChunk{ID: id, Object: "text_completion", Created: created, Model: req.Model, Choices: []completionChoice{}, Usage: usage})
	}
	sse.raw("[DONE]")
	return nil
}

// sse writes server-sent events, flushing each.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (s *sse) data(v any) {
	b, _ := json.Marshal(v)
	s.raw(string(b))
}

func (s *sse) raw(data string) {
	_, _ = s.w.Write([]byte("data: " + data + "\n\n"))
	if s.f != nil {
		s.f.Flush()
	}
}
