package mockupstream

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// Bedrock's embedding models on InvokeModel: Amazon Titan Text Embeddings
// (amazon.titan-embed-text-v1, -v2:0) and Cohere Embed
// (cohere.embed-english-v3, -multilingual-v3, embed-v4), each with its own
// body, validated as Bedrock does (an unknown key, a missing one or a
// value out of range is a ValidationException), and answered with the
// model family's own JSON and the X-Amzn-Bedrock-Input-Token-Count header.

// ShapeBedrockEmbeddings is an embedding model's body on InvokeModel.
const ShapeBedrockEmbeddings = "bedrock_embeddings"

// bedrockEmbedFamily is "titan", "cohere", or "" for a model that does not
// embed.
func bedrockEmbedFamily(model string) string {
	switch {
	case strings.Contains(model, "amazon.titan-embed-text"):
		return "titan"
	case strings.Contains(model, "cohere.embed"):
		return "cohere"
	}
	return ""
}

// bedrockEmbedRequest is what the reply depends on.
type bedrockEmbedRequest struct {
	family  string
	texts   []string
	dims    int
	byType  bool // Cohere: embedding_types was sent
	titanV2 bool
}

// decodeBedrockEmbed validates an embedding model's InvokeModel body.
func decodeBedrockEmbed(body []byte, model string, stream bool) (*bedrockEmbedRequest, *apiError) {
	if stream {
		return nil, bedrockInvalid("The model is unsupported for streaming.")
	}
	var top map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if dec.Decode(&top) != nil || top == nil {
		return nil, bedrockInvalid("Malformed input request, please reformat your input and try again.")
	}
	extraneous := func(allowed ...string) *apiError {
		for k := range top {
			if !slices.Contains(allowed, k) {
				return bedrockInvalid("Malformed input request: #: extraneous key [" + k + "] is not permitted, please reformat your input and try again.")
			}
		}
		return nil
	}
	r := &bedrockEmbedRequest{family: bedrockEmbedFamily(model)}
	switch r.family {
	case "titan":
		r.titanV2 = strings.Contains(model, "titan-embed-text-v2")
		allowed := []string{"inputText"}
		r.dims = 1536
		if r.titanV2 {
			allowed, r.dims = append(allowed, "dimensions", "normalize", "embeddingTypes"), 1024
		}
		if e := extraneous(allowed...); e != nil {
			return nil, e
		}
		var text string
		if json.Unmarshal(top["inputText"], &text) != nil || text == "" {
			return nil, bedrockInvalid("Malformed input request: #: required key [inputText] not found, please reformat your input and try again.")
		}
		r.texts = []string{text}
		if raw, ok := top["dimensions"]; ok {
			if json.Unmarshal(raw, &r.dims) != nil || (r.dims != 256 && r.dims != 512 && r.dims != 1024) {
				return nil, bedrockInvalid("Malformed input request: #/dimensions: " + string(raw) + " is not a valid enum value, please reformat your input and try again.")
			}
		}
	case "cohere":
		v4 := strings.Contains(model, "embed-v4")
		allowed := []string{"texts", "input_type", "truncate", "embedding_types"}
		r.dims = 1024
		if v4 {
			allowed, r.dims = append(allowed, "output_dimension", "max_tokens"), 1536
		}
		if e := extraneous(allowed...); e != nil {
			return nil, e
		}
		if json.Unmarshal(top["texts"], &r.texts) != nil || len(r.texts) == 0 {
			return nil, bedrockInvalid("Malformed input request: #: required key [texts] not found, please reformat your input and try again.")
		}
		if len(r.texts) > 96 {
			return nil, bedrockInvalid("Malformed input request: #/texts: expected maximum item count: 96, found: " + strconv.Itoa(len(r.texts)) + ", please reformat your input and try again.")
		}
		var it string
		_ = json.Unmarshal(top["input_type"], &it)
		switch it {
		case "search_document", "search_query", "classification", "clustering":
		default:
			return nil, bedrockInvalid("Malformed input request: #/input_type: " + strconv.Quote(it) + " is not a valid enum value, please reformat your input and try again.")
		}
		if raw, ok := top["embedding_types"]; ok {
			var types []string
			if json.Unmarshal(raw, &types) != nil || !slices.Contains(types, "float") {
				return nil, bedrockInvalid("Malformed input request: #/embedding_types: the mock serves float embeddings, please reformat your input and try again.")
			}
			r.byType = true
		}
		if raw, ok := top["output_dimension"]; ok {
			if json.Unmarshal(raw, &r.dims) != nil || (r.dims != 256 && r.dims != 512 && r.dims != 1024 && r.dims != 1536) {
				return nil, bedrockInvalid("Malformed input request: #/output_dimension: " + string(raw) + " is not a valid enum value, please reformat your input and try again.")
			}
		}
	default:
		return nil, bedrockInvalid("The provided model doesn't support embeddings.")
	}
	return r, nil
}

// serveBedrockEmbed answers in the model family's shape.
func (c *call) serveBedrockEmbed() {
	r := c.bembed
	tokens := 0
	vectors := make([][]float32, len(r.texts))
	for i, t := range r.texts {
		tokens += max(1, (len(t)+3)/4)
		vectors[i] = textVector(c.model, t, r.dims)
	}
	c.w.Header().Set("X-Amzn-Bedrock-Input-Token-Count", strconv.Itoa(tokens))
	if r.family == "titan" {
		out := map[string]any{"embedding": vectors[0], "inputTextTokenCount": tokens}
		if r.titanV2 {
			out["embeddingsByType"] = map[string]any{"float": vectors[0]}
		}
		c.writeJSON(out)
		return
	}
	out := map[string]any{"id": randomID("", 32, alphaHex), "texts": r.texts}
	if r.byType {
		out["response_type"], out["embeddings"] = "embeddings_by_type", map[string]any{"float": vectors}
	} else {
		out["response_type"], out["embeddings"] = "embeddings_floats", vectors
	}
	c.writeJSON(out)
}
