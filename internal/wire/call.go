package wire

import (
	"errors"
	"net/http"
	"strings"
)

// The inbound parse: what an inference request's path and headers say
// before its body is read. Relay serves its endpoints under a dialect
// prefix too (/openai/…, /anthropic/…, /gemini/…), and Gemini's own paths
// name the model and whether to stream where other shapes put them in the
// body. ParseCall decides all of that once, so the proxy sees one form of
// request: it asks the Call (and the Request its Scan yields) rather than
// the dialect.

// Call is what ParseCall read of a request.
type Call struct {
	// Path is the request path with a /openai, /anthropic or /gemini
	// prefix off: what the endpoints are matched on.
	Path string
	// In is the inference shape the path names; InboundNone for the
	// paths that are not a call of a model (the model list, files,
	// batches, stored responses, conversations, /).
	In Inbound
	// Dialect is the family whose errors and lists the caller reads:
	// the shape's own for an inference call, else the prefix's or the
	// one the SDK's headers tell (anthropic-version; @google/genai's
	// x-goog-api-key on /v1/models).
	Dialect Dialect
	// Models: the path lists the models (Model "") or gets one (Model).
	Models bool
	// Model is the model the path names: Gemini's
	// /v1beta/models/{model}:{method} (without its "models/" prefix),
	// or the model a model GET asks for; "" when the body names it.
	Model string
	// Stream: the path asks for a stream (Gemini's :streamGenerateContent).
	Stream bool
	// GoogleKey: the relay key may come Google's way, as x-goog-api-key
	// or ?key= (a Gemini path, the /gemini prefix, @google/genai's list).
	GoogleKey bool
	// Refused is why Relay will not serve the call as the path asks it,
	// once it is known to be a POST: streamGenerateContent without
	// ?alt=sse. nil otherwise.
	Refused *Error

	modelInPath bool // the body need not name the model: it is Model
}

// ParseCall reads the method-independent part of an inbound request: its
// path, the query when Gemini's alt=sse decides the stream, and the
// headers that tell an SDK's dialect. It does not read the body.
func ParseCall(r *http.Request) Call {
	path, h := r.URL.Path, r.Header
	var c Call
	prefixed := false // the /gemini prefix: /v1/models is Gemini's too
	switch {
	case strings.HasPrefix(path, "/openai/"):
		path = path[len("/openai"):]
	case strings.HasPrefix(path, "/anthropic/"):
		path, c.Dialect = path[len("/anthropic"):], DialectAnthropic
	case strings.HasPrefix(path, "/gemini/"):
		path, c.Dialect, c.GoogleKey, prefixed = path[len("/gemini"):], DialectGemini, true, true
	case h.Get("anthropic-version") != "":
		c.Dialect = DialectAnthropic
	case strings.HasPrefix(path, "/v1/models") && h.Get("X-Goog-Api-Key") != "" && PresentedKey(h) == "":
		// @google/genai lists and gets models at /v1/models with its own
		// key header, and reads Gemini's shape back.
		c.Dialect, c.GoogleKey = DialectGemini, true
	}
	c.Path = path
	switch path {
	case "/v1/chat/completions":
		c.In = InboundChat
	case "/v1/embeddings":
		c.In = InboundEmbeddings
	case "/v1/responses":
		c.In = InboundResponses
	case "/v1/messages":
		c.In = InboundMessages
	case "/v1/messages/count_tokens":
		c.In = InboundCountTokens
	case "/v1/generate":
		c.In = InboundGenerate
	case "/v1/models":
		c.Models = true
		return c
	case "/":
		return c
	default:
		if c.In = endpointInbound(path); c.In != InboundNone {
			break
		}
		if g, ok := parseGeminiPath(path, prefixed); ok {
			c.geminiCall(g, r)
			return c
		}
		if name, ok := strings.CutPrefix(path, "/v1/models/"); ok && name != "" {
			c.Models, c.Model = true, name
		}
		return c
	}
	c.Dialect = c.In.Dialect()
	return c
}

// geminiCall fills c from what a Gemini path said.
func (c *Call) geminiCall(g geminiPath, r *http.Request) {
	c.Dialect, c.GoogleKey, c.Model = DialectGemini, true, g.model
	if g.in == InboundNone {
		c.Models = true // GET of a model or the list
		return
	}
	c.In, c.Stream, c.modelInPath = g.in, g.stream, true
	if c.Stream && r.URL.Query().Get("alt") != "sse" {
		c.Refused = Errorf(ErrMalformedRequest, "Relay streams streamGenerateContent as server-sent events only: add ?alt=sse to the URL (Google's SDKs do).")
	}
}

// endpointInbound is the inbound shape of one of the endpoint paths
// (InboundCompletions … InboundRerank), else InboundNone.
func endpointInbound(path string) Inbound {
	for in := InboundCompletions; in <= InboundRerank; in++ {
		if in.EndpointPath() == path {
			return in
		}
	}
	return InboundNone
}

// Scan reads the call's body as ScanRequest does. For a call whose path
// names the model (Gemini's), the model and stream are the path's, the
// output estimate is generationConfig.maxOutputTokens (ScanGemini, which
// refuses a duplicate of it under any spelling Gemini reads), the body
// need not name a model, and the Request says ModelInPath.
func (c *Call) Scan(body []byte) (Request, error) {
	r, err := ScanRequest(body)
	if !c.modelInPath {
		return r, err
	}
	if err != nil && !errors.Is(err, ErrMissingModel) {
		return r, err
	}
	r.Model, r.Stream, r.IncludeUsage, r.ModelInPath = c.Model, c.Stream, c.Stream, true
	g, err := ScanGemini(body)
	r.MaxTokens = g.MaxTokens
	return r, err
}
