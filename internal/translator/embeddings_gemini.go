package translator

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// embeddingsGemini serves OpenAI embeddings callers through Gemini
// bindings, with one models/{model}:batchEmbedContents call: one request
// per input, dimensions as outputDimensionality, and the vectors written
// back in OpenAI's list shape — as floats, or as base64 little-endian
// float32 for encoding_format base64, as OpenAI does. Gemini reports no
// token count for embeddings, so usage is 0 prompt and total tokens
// (docs/inference-api.md). It is not a generation pair: it has no row in
// the support matrix, and one instance is both its upstream and its
// caller side, since the vectors it decodes are what it writes.
var embeddingsGemini = pairSpec{
	name: "embeddings→gemini", in: wire.InboundEmbeddings, up: wire.ShapeGemini,
	newUpstream: func(time.Time) upstream { return &geminiEmbedder{} },
}

// geminiBatchLimit is the most requests one batchEmbedContents call takes.
const geminiBatchLimit = 100

// errEmbeddingStream is what an event on an embeddings answer means.
var errEmbeddingStream = errors.New("an embeddings answer does not stream")

// geminiEmbedder is one attempt of an embeddings request through Gemini.
type geminiEmbedder struct {
	req     *canonical.EmbedRequest
	vectors [][]float32
}

func (e *geminiEmbedder) path(t *Target, _ bool) string {
	model := strings.TrimPrefix(t.UpstreamModel, "models/")
	return "/v1beta/models/" + url.PathEscape(model) + ":batchEmbedContents"
}

func (e *geminiEmbedder) encode(dst []byte, x *encoder) ([]byte, error) {
	r := x.e
	e.req = r
	if len(r.Inputs) > geminiBatchLimit {
		return dst, rejectField(x.in, "input", x.t, "Gemini embeds at most "+strconv.Itoa(geminiBatchLimit)+" inputs per request")
	}
	if r.User != "" {
		return dst, rejectField(x.in, "user", x.t, "Gemini's Developer API has no end-user id")
	}
	model := "models/" + strings.TrimPrefix(x.t.UpstreamModel, "models/")
	dst = append(dst, `{"requests":[`...)
	for i, in := range r.Inputs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"model":`...)
		dst = wire.AppendString(dst, model)
		dst = append(dst, `,"content":{"parts":[{"text":`...)
		dst = wire.AppendString(dst, in)
		dst = append(dst, `}]}`...)
		if r.Dimensions != nil {
			dst = append(dst, `,"outputDimensionality":`...)
			dst = appendInt(dst, *r.Dimensions)
		}
		if r.TaskType != "" {
			dst = append(dst, `,"taskType":`...)
			dst = wire.AppendString(dst, r.TaskType)
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...), nil
}

func (e *geminiEmbedder) decodeResponse(body []byte, r *canonical.Response) error {
	vs, err := decodeGeminiEmbeddings(body)
	if err != nil {
		return err
	}
	if e.req != nil && len(vs) != len(e.req.Inputs) {
		return errors.New("the upstream returned " + strconv.Itoa(len(vs)) + " embeddings for " + strconv.Itoa(len(e.req.Inputs)) + " inputs")
	}
	e.vectors = vs
	return nil
}

func (e *geminiEmbedder) decodeEvent(_ *wire.Event, evs []canonical.Event) ([]canonical.Event, error) {
	return evs, errEmbeddingStream
}

func (e *geminiEmbedder) atEOF(evs []canonical.Event) ([]canonical.Event, bool) { return evs, false }

// response writes OpenAI's embeddings list for the decoded vectors.
func (e *geminiEmbedder) response(dst []byte, r *canonical.Response) []byte {
	b64 := e.req != nil && e.req.EncodingFormat == "base64"
	model := ""
	if e.req != nil {
		model = e.req.Model
	}
	dst = append(dst, `{"object":"list","data":[`...)
	for i, v := range e.vectors {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"object":"embedding","index":`...)
		dst = appendInt(dst, int64(i))
		dst = append(dst, `,"embedding":`...)
		if b64 {
			dst = appendBase64Floats(dst, v)
		} else {
			dst = appendFloats(dst, v)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `],"model":`...)
	dst = wire.AppendString(dst, model)
	dst = append(dst, `,"usage":{"prompt_tokens":`...)
	dst = appendInt(dst, r.Usage.Input)
	dst = append(dst, `,"total_tokens":`...)
	dst = appendInt(dst, r.Usage.Input)
	return append(dst, "}}\n"...)
}

func (e *geminiEmbedder) event(dst []byte, _ *canonical.Event) []byte { return dst }

func (e *geminiEmbedder) errorBody(dst []byte, err *canonical.Error, _ string) []byte {
	dst = append(dst, `{"error":`...)
	dst = appendChatError(dst, err)
	return append(dst, "}\n"...)
}

func (e *geminiEmbedder) streamError(dst []byte, err *canonical.Error) []byte {
	return e.errorBody(dst, err, "")
}

func appendFloats(dst []byte, v []float32) []byte {
	dst = append(dst, '[')
	for i, f := range v {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendFloat(dst, float64(f), 'g', -1, 32)
	}
	return append(dst, ']')
}

// appendBase64Floats appends v as a JSON string of base64 little-endian
// float32s, OpenAI's encoding_format base64.
func appendBase64Floats(dst []byte, v []float32) []byte {
	raw := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(f))
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, raw)
	return append(dst, '"')
}

// --- the caller side: OpenAI's embeddings request ---

type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	Dimensions     *int64          `json:"dimensions,omitempty"`
	EncodingFormat string          `json:"encoding_format,omitempty"`
	User           string          `json:"user,omitempty"`
}

// decodeEmbeddingsRequest reads an OpenAI embeddings body. Token-array
// inputs are refused: only OpenAI's own tokenizer can read them.
func decodeEmbeddingsRequest(body []byte, r *canonical.EmbedRequest) error {
	var q embeddingsRequest
	if err := decodeStrict(body, &q); err != nil {
		return err
	}
	if q.Model == "" {
		return badField("model", "a model is required")
	}
	raw := bytes.TrimSpace(q.Input)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return badField("input", "an input is required")
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return badField("input", "malformed string")
		}
		r.Inputs = []string{s}
	case raw[0] == '[':
		var many []json.RawMessage
		if err := json.Unmarshal(raw, &many); err != nil {
			return badField("input", "malformed array")
		}
		if len(many) == 0 {
			return badField("input", "at least one input is required")
		}
		r.Inputs = make([]string, 0, len(many))
		for i, m := range many {
			var s string
			if err := json.Unmarshal(m, &s); err != nil {
				return unsupported("input", "token-id inputs (input["+strconv.Itoa(i)+"] is not a string) can only be sent to a model bound in the openai shape")
			}
			r.Inputs = append(r.Inputs, s)
		}
	default:
		return badField("input", "a string or an array of strings is expected")
	}
	for i, s := range r.Inputs {
		if s == "" {
			return badField("input", "input[%d] is empty", i)
		}
	}
	switch q.EncodingFormat {
	case "", "float", "base64":
	default:
		return badField("encoding_format", "one of float, base64")
	}
	if q.Dimensions != nil && *q.Dimensions < 1 {
		return badField("dimensions", "must be at least 1")
	}
	r.Model, r.Dimensions, r.EncodingFormat, r.User = q.Model, q.Dimensions, q.EncodingFormat, q.User
	return nil
}
