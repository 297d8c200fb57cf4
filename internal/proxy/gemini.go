package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/relay-llm/relay/internal/routing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Gemini's own API, for callers of Google's SDKs: POST
// /v1beta/models/{model}:{method} for generateContent,
// streamGenerateContent (?alt=sse), countTokens, embedContent and
// batchEmbedContents, and GET /v1beta/models[/{model}] — also under
// /gemini/…, and the same methods under /v1/models/. The model in the path
// is a catalog model name (model@host pins a host), with or without
// Gemini's "models/" prefix; the relay key comes as Bearer, x-api-key,
// X-Relay-Key, x-goog-api-key or ?key=. Gemini bindings get the body
// verbatim with the upstream model spliced into the URL path; other
// bindings are served through package translator.

// geminiMethods maps a method in the path to the inbound shape it is.
var geminiMethods = map[string]wire.Inbound{
	"generateContent":       wire.InboundGemini,
	"streamGenerateContent": wire.InboundGemini,
	"countTokens":           wire.InboundGeminiCountTokens,
	"embedContent":          wire.InboundGeminiEmbed,
	"batchEmbedContents":    wire.InboundGeminiBatchEmbed,
}

// geminiCall is what a Gemini path says.
type geminiCall struct {
	model  string // the catalog model; "" for the model list
	method string // "" for GET of a model or the list
	in     wire.Inbound
	stream bool
}

// parseGeminiPath reads a path whose /gemini prefix is already off. ok is
// false for a path that is not one of Gemini's.
func parseGeminiPath(path string, gemini bool) (geminiCall, bool) {
	var rest string
	switch {
	case strings.HasPrefix(path, "/v1beta/models"):
		rest = path[len("/v1beta/models"):]
	case strings.HasPrefix(path, "/v1/models/") || gemini && path == "/v1/models":
		rest = path[len("/v1/models"):]
	default:
		return geminiCall{}, false
	}
	if rest == "" || rest == "/" {
		return geminiCall{}, true // the list
	}
	if rest[0] != '/' {
		return geminiCall{}, false
	}
	name := rest[1:]
	var c geminiCall
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		if in, known := geminiMethods[name[i+1:]]; known {
			c.method, c.in, name = name[i+1:], in, name[:i]
			c.stream = c.method == "streamGenerateContent"
		}
	}
	if c.method == "" && !gemini && strings.HasPrefix(path, "/v1/") {
		return geminiCall{}, false // OpenAI's GET /v1/models/{name}
	}
	// The SDKs send models/{model}; a catalog name may itself hold a slash.
	c.model = strings.TrimPrefix(name, "models/")
	if c.model == "" {
		return geminiCall{}, false
	}
	return c, true
}

// serveGemini answers a Gemini path; it reports false when path is not
// one, for the caller to answer 404.
func (h *Handler) serveGemini(rq *request, path string, gemini bool) bool {
	c, ok := parseGeminiPath(path, gemini)
	if !ok {
		return false
	}
	rq.dialect = wire.DialectGemini
	geminiKey(rq.r)
	if c.method == "" {
		h.serveModelsAt(rq, c.model)
		return true
	}
	rq.in = c.in
	if rq.r.Method != http.MethodPost {
		rq.fail(wire.Errorf(wire.ErrMethodNotAllowed, "Use POST for %s.", rq.r.URL.Path))
		rq.finish()
		return true
	}
	if c.stream && rq.r.URL.Query().Get("alt") != "sse" {
		rq.fail(wire.Errorf(wire.ErrMalformedRequest, "Relay streams streamGenerateContent as server-sent events only: add ?alt=sse to the URL (Google's SDKs do)."))
		rq.finish()
		return true
	}
	h.serveLimited(rq)
	return true
}

// geminiKey makes a relay key sent Gemini's way (x-goog-api-key, ?key=)
// the one authentication reads, when no other credential header came.
func geminiKey(r *http.Request) {
	if presentedKey(r.Header) != "" {
		return
	}
	key := r.Header.Get("X-Goog-Api-Key")
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	if key != "" {
		r.Header.Set("X-Relay-Key", key)
	}
}

// geminiScan completes the scan of a Gemini body: the model and stream
// come from the path, the output estimate from
// generationConfig.maxOutputTokens, read by wire.ScanGemini (which refuses
// a duplicate of it under any spelling Gemini reads). A body need not name
// a model.
func (rq *request) geminiScan(scan wire.Request, err error) (wire.Request, error) {
	if err != nil && !errors.Is(err, wire.ErrMissingModel) {
		return scan, err
	}
	path, gemini := strings.CutPrefix(rq.r.URL.Path, "/gemini")
	c, _ := parseGeminiPath(path, gemini)
	scan.Model, scan.Stream, scan.IncludeUsage = c.model, c.stream, c.stream
	g, err := wire.ScanGemini(rq.body.Bytes())
	scan.MaxTokens = g.MaxTokens
	return scan, err
}

// geminiUpstream is the body and URL of an attempt through a gemini
// binding: the caller's body, and its path with the binding's upstream
// model in it. The query goes along but for the relay key.
func (rq *request) geminiUpstream(c *routing.Candidate) ([]byte, string) {
	model := strings.TrimPrefix(c.Binding.UpstreamModel, "models/")
	u := wire.JoinURL(c.Host.BaseURL, "/v1beta/models/"+url.PathEscape(model)+":"+rq.in.GeminiMethod(rq.stream))
	if q := rq.r.URL.Query(); len(q) > 0 {
		q.Del("key")
		if enc := q.Encode(); enc != "" {
			u += "?" + enc
		}
	}
	return rq.geminiEmbedBody(c.Binding), u
}

// geminiEmbedBody is the body for a gemini binding. Embedding requests
// name their model inside the body too ("models/{model}", which Gemini
// checks against the path): those names are replaced by the binding's
// upstream model, so the model Gemini acts on is the one Relay routed to.
// Every other body goes verbatim.
func (rq *request) geminiEmbedBody(b *snapshot.Binding) []byte {
	body := rq.withoutHint(rq.body.Bytes())
	if rq.in != wire.InboundGeminiEmbed && rq.in != wire.InboundGeminiBatchEmbed {
		return body
	}
	want := "models/" + strings.TrimPrefix(b.UpstreamModel, "models/")
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return body // the upstream says what is wrong with it
	}
	setModel := func(o map[string]json.RawMessage) bool {
		raw, ok := o["model"]
		if !ok {
			return false
		}
		var have string
		if json.Unmarshal(raw, &have) == nil && have == want {
			return false
		}
		o["model"], _ = json.Marshal(want)
		return true
	}
	changed := false
	if rq.in == wire.InboundGeminiEmbed {
		changed = setModel(m)
	} else {
		var reqs []map[string]json.RawMessage
		if json.Unmarshal(m["requests"], &reqs) != nil {
			return body
		}
		for _, r := range reqs {
			if setModel(r) {
				changed = true
			}
		}
		if changed {
			m["requests"], _ = json.Marshal(reqs)
		}
	}
	if !changed {
		return body
	}
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	if rq.sending.Load() > 0 {
		rq.upBody = nil // an earlier attempt's body may still be on the wire
	}
	rq.upBody = append(rq.upBody[:0], bytes.TrimSpace(out)...)
	return rq.upBody
}

// appendGeminiModel appends m as a Gemini Model object.
func appendGeminiModel(b []byte, m *snapshot.Model) []byte {
	b = append(b, `{"name":`...)
	b = wire.AppendString(b, "models/"+m.Name)
	b = append(b, `,"baseModelId":`...)
	b = wire.AppendString(b, m.Name)
	b = append(b, `,"version":"001","displayName":`...)
	b = wire.AppendString(b, m.Name)
	if m.ContextWindow > 0 {
		b = append(b, `,"inputTokenLimit":`...)
		b = strconv.AppendInt(b, int64(m.ContextWindow), 10)
	}
	if m.MaxOutputTokens > 0 {
		b = append(b, `,"outputTokenLimit":`...)
		b = strconv.AppendInt(b, int64(m.MaxOutputTokens), 10)
	}
	b = append(b, `,"supportedGenerationMethods":`...)
	if m.Kind == "embedding" {
		b = append(b, `["embedContent","batchEmbedContents"]`...)
	} else {
		b = append(b, `["generateContent","countTokens"]`...)
	}
	return append(b, '}')
}
