package translator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// geminiEmbedOpenAI and geminiBatchEmbedOpenAI serve Gemini's
// embedContent and batchEmbedContents callers through OpenAI embeddings
// bindings — the reverse of embeddingsGemini: one /v1/embeddings call with
// every text, outputDimensionality as dimensions, and the vectors written
// back as Gemini's {"embedding":{"values"}} or {"embeddings":[…]}.
// taskType and title are advisory (OpenAI has neither) and dropped. Like
// embeddingsGemini it has no row in the support matrix, and one instance
// is both its upstream and its caller side.
var (
	geminiEmbedOpenAI = pairSpec{
		name: "gemini_embed_content→openai", in: wire.InboundGeminiEmbed, up: wire.ShapeOpenAI,
		newUpstream: func(time.Time) upstream { return &openaiEmbedder{} },
	}
	geminiBatchEmbedOpenAI = pairSpec{
		name: "gemini_batch_embed_contents→openai", in: wire.InboundGeminiBatchEmbed, up: wire.ShapeOpenAI,
		newUpstream: func(time.Time) upstream { return &openaiEmbedder{batch: true} },
	}
)

// openaiEmbedder is one attempt of a Gemini embeddings request through an
// OpenAI binding.
type openaiEmbedder struct {
	batch   bool
	req     *canonical.EmbedRequest
	vectors [][]float32
}

func (e *openaiEmbedder) path(*Target, bool) string {
	return wire.UpstreamPath(wire.InboundEmbeddings, wire.ShapeOpenAI)
}

func (e *openaiEmbedder) encode(dst []byte, x *encoder) ([]byte, error) {
	r := x.e
	e.req = r
	dst = append(dst, `{"model":`...)
	dst = wire.AppendString(dst, x.t.UpstreamModel)
	dst = append(dst, `,"input":[`...)
	for i, in := range r.Inputs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = wire.AppendString(dst, in)
	}
	dst = append(dst, ']')
	if r.Dimensions != nil {
		dst = append(dst, `,"dimensions":`...)
		dst = appendInt(dst, *r.Dimensions)
	}
	return append(dst, `,"encoding_format":"float"}`...), nil
}

type openaiEmbeddingsResponse struct {
	Data []struct {
		Embedding []float32 `json:"embedding"`
		Index     int       `json:"index"`
	} `json:"data"`
	Usage *struct {
		PromptTokens int64 `json:"prompt_tokens"`
	} `json:"usage"`
}

func (e *openaiEmbedder) decodeResponse(body []byte, r *canonical.Response) error {
	var q openaiEmbeddingsResponse
	if err := json.Unmarshal(body, &q); err != nil {
		return fmt.Errorf("decode embeddings response: %w", err)
	}
	n := len(q.Data)
	if e.req != nil && n != len(e.req.Inputs) {
		return errors.New("the upstream returned " + strconv.Itoa(n) + " embeddings for " + strconv.Itoa(len(e.req.Inputs)) + " inputs")
	}
	e.vectors = make([][]float32, n)
	for _, d := range q.Data {
		if d.Index < 0 || d.Index >= n || e.vectors[d.Index] != nil || len(d.Embedding) == 0 {
			return fmt.Errorf("embedding %d is missing, repeated or empty", d.Index)
		}
		e.vectors[d.Index] = d.Embedding
	}
	if q.Usage != nil {
		r.Usage.Input = q.Usage.PromptTokens
	}
	return nil
}

func (e *openaiEmbedder) decodeEvent(_ *wire.Event, evs []canonical.Event) ([]canonical.Event, error) {
	return evs, errEmbeddingStream
}

func (e *openaiEmbedder) atEOF(evs []canonical.Event) ([]canonical.Event, bool) { return evs, false }

func (e *openaiEmbedder) response(dst []byte, _ *canonical.Response) []byte {
	if !e.batch {
		dst = append(dst, `{"embedding":{"values":`...)
		if len(e.vectors) > 0 {
			dst = appendFloats(dst, e.vectors[0])
		} else {
			dst = append(dst, "[]"...)
		}
		return append(dst, "}}\n"...)
	}
	dst = append(dst, `{"embeddings":[`...)
	for i, v := range e.vectors {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"values":`...)
		dst = appendFloats(dst, v)
		dst = append(dst, '}')
	}
	return append(dst, "]}\n"...)
}

func (e *openaiEmbedder) event(dst []byte, _ *canonical.Event) []byte { return dst }

func (e *openaiEmbedder) errorBody(dst []byte, err *canonical.Error, _ string) []byte {
	return append(wire.AppendGeminiError(dst, err.Status, err.Message, err.Code, err.Param), '\n')
}

func (e *openaiEmbedder) streamError(dst []byte, err *canonical.Error) []byte {
	return e.errorBody(dst, err, "")
}

// --- the caller side: Gemini's embedContent and batchEmbedContents ---

type gemEmbedRequest struct {
	Model                string      `json:"model"`
	Content              *gemContent `json:"content"`
	TaskType             string      `json:"taskType"`
	Title                string      `json:"title"`
	OutputDimensionality *int64      `json:"outputDimensionality"`
}

// decodeGeminiEmbed reads an embedContent body (batch false) or a
// batchEmbedContents body.
func decodeGeminiEmbed(body []byte, batch bool, r *canonical.EmbedRequest) error {
	var reqs []gemEmbedRequest
	if batch {
		var q struct {
			Requests []gemEmbedRequest `json:"requests"`
		}
		if err := decodeGeminiStrict(body, &q); err != nil {
			return err
		}
		if len(q.Requests) == 0 {
			return badField("requests", "at least one request is required")
		}
		reqs = q.Requests
	} else {
		var q gemEmbedRequest
		if err := decodeGeminiStrict(body, &q); err != nil {
			return err
		}
		reqs = []gemEmbedRequest{q}
	}
	for i := range reqs {
		q := &reqs[i]
		at := ""
		if batch {
			at = "requests[" + strconv.Itoa(i) + "]."
		}
		if q.Content == nil || len(q.Content.Parts) == 0 {
			return badField(at+"content", "a content with one text part is required")
		}
		if len(q.Content.Parts) > 1 {
			return unsupported(at+"content.parts", "another provider embeds one text per input; send one part per request")
		}
		p := &q.Content.Parts[0]
		if p.Text == "" || p.Thought || p.InlineData != nil || p.FileData != nil || p.FunctionCall != nil || p.FunctionResponse != nil {
			return badField(at+"content.parts[0]", "a text part is required")
		}
		if d := q.OutputDimensionality; d != nil {
			if *d < 1 {
				return badField(at+"outputDimensionality", "must be at least 1")
			}
			if r.Dimensions != nil && *r.Dimensions != *d {
				return unsupported(at+"outputDimensionality", "one request to another provider has one dimensionality for every input")
			}
			r.Dimensions = d
		}
		r.Inputs = append(r.Inputs, p.Text)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		return badField("body", "a JSON object is expected")
	}
	return nil
}
