package translator

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// embeddingsConverse serves OpenAI embeddings callers through a Bedrock
// host's bedrock_converse binding of an embedding model: Converse has no
// embeddings, so the call is InvokeModel (/model/{id}/invoke) with the
// model family's own body — Amazon Titan Text Embeddings (one input per
// call; inputTextTokenCount is the usage) or Cohere Embed (up to 96 texts;
// Bedrock's answer has no token count, so usage is 0, as Gemini's). The
// vectors go back in OpenAI's list shape, floats or base64, as
// embeddingsGemini writes them. Like embeddingsGemini it has no row in
// the support matrix.
var embeddingsConverse = pairSpec{
	name: "embeddings→converse", in: wire.InboundEmbeddings, up: wire.ShapeBedrockConverse,
	newUpstream: func(time.Time) upstream { return &bedrockEmbedder{} },
}

// cohereBatchLimit is the most texts one Cohere Embed call takes on Bedrock.
const cohereBatchLimit = 96

// bedrockEmbedder is one attempt of an embeddings request through Bedrock;
// the OpenAI list it writes is geminiEmbedder's.
type bedrockEmbedder struct {
	geminiEmbedder
	cohere bool
}

// embedFamily is which request body a Bedrock embedding model takes:
// "titan", "cohere", or "" for a model Relay cannot embed with.
func embedFamily(model string) string {
	// A cross-region inference profile prefixes the id (us.cohere.…).
	switch {
	case strings.Contains(model, "amazon.titan-embed-text"):
		return "titan"
	case strings.Contains(model, "cohere.embed"):
		return "cohere"
	}
	return ""
}

func (e *bedrockEmbedder) path(t *Target, _ bool) string {
	return "/model/" + escapeModelID(t.UpstreamModel) + "/invoke"
}

func (e *bedrockEmbedder) encode(dst []byte, x *encoder) ([]byte, error) {
	r := x.e
	e.req = r
	if r.User != "" {
		return dst, rejectField(x.in, "user", x.t, "Bedrock's embedding models take no end-user id")
	}
	switch embedFamily(x.t.UpstreamModel) {
	case "titan":
		if len(r.Inputs) != 1 {
			return dst, rejectField(x.in, "input", x.t, "Amazon Titan embeds one input per request; send each text on its own")
		}
		v2 := strings.Contains(x.t.UpstreamModel, "titan-embed-text-v2")
		if r.Dimensions != nil && !v2 {
			return dst, rejectField(x.in, "dimensions", x.t, "Titan Text Embeddings v1 has a fixed size")
		}
		dst = append(dst, `{"inputText":`...)
		dst = wire.AppendString(dst, r.Inputs[0])
		if r.Dimensions != nil {
			switch *r.Dimensions {
			case 256, 512, 1024:
			default:
				return dst, rejectField(x.in, "dimensions", x.t, "Titan Text Embeddings v2 takes 256, 512 or 1024")
			}
			dst = append(dst, `,"dimensions":`...)
			dst = appendInt(dst, *r.Dimensions)
		}
		if v2 {
			dst = append(dst, `,"normalize":true`...)
		}
		return append(dst, '}'), nil
	case "cohere":
		e.cohere = true
		if len(r.Inputs) > cohereBatchLimit {
			return dst, rejectField(x.in, "input", x.t, "Cohere Embed takes at most "+strconv.Itoa(cohereBatchLimit)+" inputs per request")
		}
		v4 := strings.Contains(x.t.UpstreamModel, "embed-v4")
		if r.Dimensions != nil && !v4 {
			return dst, rejectField(x.in, "dimensions", x.t, "Cohere Embed v3 has a fixed size")
		}
		dst = append(dst, `{"texts":[`...)
		for i, in := range r.Inputs {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = wire.AppendString(dst, in)
		}
		dst = append(dst, `],"input_type":"search_document","embedding_types":["float"]`...)
		if r.Dimensions != nil {
			dst = append(dst, `,"output_dimension":`...)
			dst = appendInt(dst, *r.Dimensions)
		}
		return append(dst, '}'), nil
	}
	return dst, rejectField(x.in, "model", x.t, "Relay embeds through Bedrock with Amazon Titan Text Embeddings and Cohere Embed models only")
}

// titanEmbedResponse is InvokeModel's answer for Titan Text Embeddings.
type titanEmbedResponse struct {
	Embedding           []float32 `json:"embedding"`
	InputTextTokenCount int64     `json:"inputTextTokenCount"`
}

// cohereEmbedResponse is InvokeModel's answer for Cohere Embed: a list of
// vectors (response_type embeddings_floats) or, with embedding_types, an
// object of lists by type (embeddings_by_type).
type cohereEmbedResponse struct {
	Embeddings   json.RawMessage `json:"embeddings"`
	ResponseType string          `json:"response_type"`
}

func (e *bedrockEmbedder) decodeResponse(body []byte, r *canonical.Response) error {
	if !e.cohere {
		var q titanEmbedResponse
		if err := json.Unmarshal(body, &q); err != nil {
			return fmt.Errorf("decode Titan embeddings response: %w", err)
		}
		if len(q.Embedding) == 0 {
			return errors.New("the Titan response holds no embedding")
		}
		e.vectors = [][]float32{q.Embedding}
		r.Usage.Input = q.InputTextTokenCount
		return nil
	}
	var q cohereEmbedResponse
	if err := json.Unmarshal(body, &q); err != nil {
		return fmt.Errorf("decode Cohere embeddings response: %w", err)
	}
	var vs [][]float32
	if q.ResponseType == "embeddings_by_type" {
		var by struct {
			Float [][]float32 `json:"float"`
		}
		if err := json.Unmarshal(q.Embeddings, &by); err != nil {
			return fmt.Errorf("decode Cohere embeddings: %w", err)
		}
		vs = by.Float
	} else if err := json.Unmarshal(q.Embeddings, &vs); err != nil {
		return fmt.Errorf("decode Cohere embeddings: %w", err)
	}
	if e.req != nil && len(vs) != len(e.req.Inputs) {
		return errors.New("the upstream returned " + strconv.Itoa(len(vs)) + " embeddings for " + strconv.Itoa(len(e.req.Inputs)) + " inputs")
	}
	for i, v := range vs {
		if len(v) == 0 {
			return fmt.Errorf("embedding %d has no values", i)
		}
	}
	e.vectors = vs
	return nil
}
