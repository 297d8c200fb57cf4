package mockupstream

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// speechRequest is what the mock reads of an audio/speech body.
type speechRequest struct {
	Model          string `json:"model"`
	Input          string `json:"input"`
	Voice          string `json:"voice"`
	ResponseFormat string `json:"response_format"`
}

// speechBytesPerChar is how much "audio" the mock makes per input character.
const speechBytesPerChar = 256

// serveSpeech answers POST /v1/audio/speech with audio bytes (an MP3 frame
// header, then filler), speechBytesPerChar per input character, streamed
// in chunks of 4 KiB without a Content-Length, as OpenAI streams it.
func serveSpeech(s *Server, w http.ResponseWriter, r *http.Request, x *exchange) *apiError {
	var req speechRequest
	if e := readJSON(r, x, &req); e != nil {
		return e
	}
	x.model = req.Model
	switch {
	case req.Model == "":
		return missing("model")
	case req.Input == "":
		return missing("input")
	case req.Voice == "":
		return missing("voice")
	case len(req.Input) > 4096:
		return &apiError{kind: errInvalid, msg: "[{'type': 'string_too_long', 'loc': ('body', 'input'), 'msg': 'String should have at most 4096 characters'}]", param: "input"}
	}
	ct := "audio/mpeg"
	switch req.ResponseFormat {
	case "", "mp3":
	case "wav":
		ct = "audio/wav"
	case "opus":
		ct = "audio/opus"
	case "aac":
		ct = "audio/aac"
	case "flac":
		ct = "audio/flac"
	case "pcm":
		ct = "audio/pcm"
	default:
		return &apiError{kind: errInvalid, msg: "Invalid value: '" + req.ResponseFormat + "'.", param: "response_format", code: "invalid_value"}
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	total := len(req.Input) * speechBytesPerChar
	chunk := make([]byte, 4096)
	copy(chunk, "\xff\xfb\x90\x64")
	for sent := 0; sent < total; {
		n := min(len(chunk), total-sent)
		if _, err := w.Write(chunk[:n]); err != nil {
			return nil
		}
		sent += n
		if f != nil {
			f.Flush()
		}
		if d := s.opts.ChunkDelay; d > 0 {
			time.Sleep(d)
		}
	}
	return nil
}

// transcriptionRequest is what the mock reads of a transcription form.
type transcriptionRequest struct {
	Model          string
	Language       string
	Prompt         string
	ResponseFormat string
	fileBytes      int64
	files          int
}

// serveTranscriptions answers POST /v1/audio/transcriptions.
func serveTranscriptions(_ *Server, w http.ResponseWriter, r *http.Request, x *exchange) *apiError {
	return transcribe(w, r, x, "transcription")
}

// serveTranslations answers POST /v1/audio/translations (into English).
func serveTranslations(_ *Server, w http.ResponseWriter, r *http.Request, x *exchange) *apiError {
	return transcribe(w, r, x, "translation")
}

// transcribe reads the form as a stream (the file part is counted, never
// held) and answers "Mock <what> of <n> bytes of audio." in the format
// asked. gpt-4o(-mini)-transcribe report token usage (input: a token per
// 1 KiB of audio); whisper-1 reports the audio's duration (a second per
// 16 KiB).
func transcribe(w http.ResponseWriter, r *http.Request, x *exchange, what string) *apiError {
	req := &transcriptionRequest{}
	_, e := readForm(r, x, func(name string) *string {
		switch name {
		case "model":
			return &req.Model
		case "language":
			return &req.Language
		case "prompt":
			return &req.Prompt
		case "response_format":
			return &req.ResponseFormat
		}
		return nil
	}, func(name string, _ []byte, size int64) *apiError {
		if name == "file" {
			req.files++
			req.fileBytes += size
		}
		return nil
	})
	if e != nil {
		return e
	}
	x.model = req.Model
	switch {
	case req.files == 0:
		return missing("file")
	case req.Model == "":
		return missing("model")
	}
	text := "Mock " + what + " of " + strconv.FormatInt(req.fileBytes, 10) + " bytes of audio."
	tokens := strings.Contains(req.Model, "transcribe")
	switch req.ResponseFormat {
	case "", "json":
		out := map[string]any{"text": text}
		if tokens {
			in := max(req.fileBytes/1024, 1)
			o := textTokens(text)
			out["usage"] = map[string]any{"type": "tokens", "input_tokens": in, "output_tokens": o, "total_tokens": in + o,
				"input_token_details": map[string]any{"audio_tokens": in, "text_tokens": 0}}
		} else {
			out["usage"] = map[string]any{"type": "duration", "seconds": max(req.fileBytes/16384, 1)}
		}
		writeJSON(w, out)
	case "text":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(text + "\n"))
	case "verbose_json":
		writeJSON(w, map[string]any{"task": what, "language": cmpOr(req.Language, "english"), "duration": float64(max(req.fileBytes/16384, 1)), "text": text, "segments": []any{}})
	default:
		return &apiError{kind: errInvalid, msg: "Invalid value: '" + req.ResponseFormat + "'.", param: "response_format", code: "invalid_value"}
	}
	return nil
}
