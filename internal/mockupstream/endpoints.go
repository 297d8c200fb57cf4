package mockupstream

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The endpoints beyond chat: legacy completions, images, audio,
// moderations and rerank (OpenAI's shapes, and the Cohere/Jina rerank
// shape), each in its own file. They share this small frame — route,
// authenticate, record, answer errors in OpenAI's shape — and not the
// chat machinery of call.go: their bodies are not chat bodies, and the
// multipart ones are read as streams, never whole.

// endpointHandler is one such route's handler; it returns the model it served
// (for the record) or an error to answer.
type endpointHandler func(s *Server, w http.ResponseWriter, r *http.Request, x *exchange) *apiError

// exchange is what an endpoint handler fills in for the record.
type exchange struct {
	model  string
	stream bool
	body   []byte     // JSON bodies only; multipart ones are not kept
	files  []FormFile // a multipart body's file parts
}

// endpointFor picks the handler for a path suffix, or nil.
func endpointFor(r *http.Request) endpointHandler {
	if r.Method != http.MethodPost {
		return nil
	}
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/completions") && !strings.HasSuffix(p, "/chat/completions"):
		return serveCompletions
	case strings.HasSuffix(p, "/images/generations"):
		return serveImageGenerations
	case strings.HasSuffix(p, "/images/edits"):
		return serveImageEdits
	case strings.HasSuffix(p, "/images/variations"):
		return serveImageVariations
	case strings.HasSuffix(p, "/audio/speech"):
		return serveSpeech
	case strings.HasSuffix(p, "/audio/transcriptions"):
		return serveTranscriptions
	case strings.HasSuffix(p, "/audio/translations"):
		return serveTranslations
	case strings.HasSuffix(p, "/moderations"):
		return serveModerations
	case strings.HasSuffix(p, "/rerank"):
		return serveRerank
	}
	return nil
}

// serveEndpoint serves r if it is one of the endpoints above.
func (s *Server) serveEndpoint(w http.ResponseWriter, r *http.Request) bool {
	ep := endpointFor(r)
	if ep == nil {
		return false
	}
	x := &exchange{}
	rec := Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Shape: ShapeOpenAI, ReceivedAt: time.Now()}
	var seq uint64
	if s.record > 0 {
		seq = s.insert(rec)
	}
	sw := &statusWriter{ResponseWriter: w}
	var e *apiError
	if !s.keyAccepted(bearer(r.Header)) {
		e = &apiError{kind: errAuth, msg: "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys."}
	} else if st := s.statusFault(r); st != 0 {
		_, _ = io.Copy(io.Discard, r.Body)
		e = &apiError{status: st, kind: kindForStatus(st)}
	} else {
		e = ep(s, sw, r, x)
	}
	if e != nil {
		writeOpenAIError(sw, e)
	}
	if s.record > 0 {
		rec.Model, rec.Stream, rec.Body, rec.Files, rec.Status = x.model, x.stream, x.body, x.files, sw.status
		rec.FinishedAt = time.Now()
		s.complete(seq, &rec)
	}
	return true
}

// statusFault is the status fault these endpoints honour (the others of
// Server's list are chat's): "fault-<status>" in the fault header, else in
// the credential; 0 for none.
func (s *Server) statusFault(r *http.Request) int {
	name := cmpOr(s.opts.FaultHeader, "X-Mock-Fault")
	for _, v := range []string{r.Header.Get(name), bearer(r.Header)} {
		v = strings.TrimPrefix(v, "fault-")
		if i := strings.Index(v, "fault-"); i >= 0 {
			v = v[i+len("fault-"):]
		}
		if len(v) >= 3 {
			if st, err := strconv.Atoi(v[:3]); err == nil && st >= 400 && st <= 599 {
				return st
			}
		}
	}
	return 0
}

// statusWriter remembers the status sent.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// writeOpenAIError answers e in OpenAI's error shape.
func writeOpenAIError(w http.ResponseWriter, e *apiError) {
	status := e.status
	if status == 0 {
		status = (&call{prov: provOpenAI}).errorStatus(e)
	}
	typ := "invalid_request_error"
	switch e.kind {
	case errAuth:
		typ = "invalid_request_error"
	case errNotFound:
		typ = "invalid_request_error"
	case errServer:
		typ = "server_error"
	}
	msg := e.msg
	if msg == "" {
		msg = http.StatusText(status)
	}
	var param, code any
	if e.param != "" {
		param = e.param
	}
	if e.code != "" {
		code = e.code
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": param, "code": code}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// maxJSONBody bounds the JSON bodies of these endpoints.
const maxJSONBody = 8 << 20

// readJSON decodes r's JSON body into v, recording it in x.
func readJSON(r *http.Request, x *exchange, v any) *apiError {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxJSONBody+1))
	if err != nil {
		return &apiError{kind: errInvalid, msg: "could not read the request body"}
	}
	if len(body) > maxJSONBody {
		return &apiError{kind: errTooLarge, msg: "the request body is too large"}
	}
	x.body = body
	if err := json.Unmarshal(body, v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return &apiError{kind: errInvalid, msg: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"}
		}
		return &apiError{kind: errInvalid, msg: "Invalid request body: " + err.Error()}
	}
	return nil
}

// writeJSON answers v with status 200.
func writeJSON(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Header().Set("X-Request-Id", openAIRequestID())
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// missing is OpenAI's error for a required parameter left out.
func missing(param string) *apiError {
	return &apiError{kind: errInvalid, msg: "Missing required parameter: '" + param + "'.", param: param, code: "missing_required_parameter"}
}

// textTokens estimates tokens as bytes/4, at least 1.
func textTokens(s string) int64 { return max(int64(len(s)+3)/4, 1) }
