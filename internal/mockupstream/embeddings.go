package mockupstream

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// --- OpenAI ---

type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`

	texts  []string // string inputs
	tokens [][]int  // token-array inputs
}

// decodeEmbeddings parses and validates an embeddings request. The request is
// never nil.
func decodeEmbeddings(body []byte) (*embeddingsRequest, *apiError) {
	req := &embeddingsRequest{}
	if e := decodeBody(body, req, provOpenAI); e != nil {
		return req, e
	}
	if req.Model == "" {
		return req, openAIInvalid("you must provide a model parameter", "", "")
	}
	if isNull(req.Input) {
		return req, openAIMissing("input")
	}
	invalid := openAIInvalid("'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.", "", "")
	var one string
	var many []string
	var toks []int
	var toksMany [][]int
	switch {
	case json.Unmarshal(req.Input, &one) == nil:
		if one == "" {
			return req, invalid
		}
		req.texts = []string{one}
	case json.Unmarshal(req.Input, &many) == nil:
		if len(many) == 0 || len(many) > 2048 || slices.Contains(many, "") {
			return req, invalid
		}
		req.texts = many
	case json.Unmarshal(req.Input, &toks) == nil:
		if len(toks) == 0 {
			return req, invalid
		}
		req.tokens = [][]int{toks}
	case json.Unmarshal(req.Input, &toksMany) == nil:
		if len(toksMany) == 0 || len(toksMany) > 2048 {
			return req, invalid
		}
		for _, t := range toksMany {
			if len(t) == 0 {
				return req, invalid
			}
		}
		req.tokens = toksMany
	default:
		return req, invalid
	}
	switch req.EncodingFormat {
	case "", "float", "base64":
	default:
		return req, openAIInvalid("Invalid value: '"+req.EncodingFormat+"'. Supported values are: 'float' and 'base64'.", "encoding_format", "invalid_value")
	}
	if d := req.Dimensions; d != nil {
		switch {
		case strings.Contains(req.Model, "ada-002"):
			return req, openAIInvalid("This model does not support specifying dimensions.", "", "")
		case *d < 1 || *d > openAIEmbedDims(req.Model):
			return req, openAIInvalid("Invalid value for 'dimensions' = "+strconv.Itoa(*d)+". Must be between 1 and "+strconv.Itoa(openAIEmbedDims(req.Model))+".", "dimensions", "invalid_value")
		}
	}
	return req, nil
}

type embeddingList struct {
	Object string           `json:"object"`
	Data   []embeddingDatum `json:"data"`
	Model  string           `json:"model"`
	Usage  embeddingUsage   `json:"usage"`
}

type embeddingDatum struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32 or a base64 string
}

type embeddingUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// openAIEmbedDims is the default vector size of an OpenAI embedding model.
func openAIEmbedDims(model string) int {
	if strings.Contains(model, "3-large") {
		return 3072
	}
	return 1536
}

func (c *call) serveEmbeddings() {
	req := c.emb
	dims := openAIEmbedDims(req.Model)
	if req.Dimensions != nil {
		dims = *req.Dimensions
	}
	out := embeddingList{Object: "list", Model: req.Model}
	tokens := 0
	add := func(v []float32) {
		d := embeddingDatum{Object: "embedding", Index: len(out.Data), Embedding: v}
		if req.EncodingFormat == "base64" {
			d.Embedding = base64Floats(v)
		}
		out.Data = append(out.Data, d)
	}
	for _, t := range req.texts {
		tokens += max(1, (len(t)+3)/4)
		add(textVector(req.Model, t, dims))
	}
	for _, t := range req.tokens {
		tokens += len(t)
		var b strings.Builder
		for _, n := range t {
			b.WriteString(strconv.Itoa(n))
			b.WriteByte(' ')
		}
		add(embedVector(hashSeed(req.Model, b.String()), dims))
	}
	out.Usage = embeddingUsage{PromptTokens: tokens, TotalTokens: tokens}
	c.writeJSON(&out)
}

// --- Gemini ---

type geminiEmbedRequest struct {
	// embedContent
	geminiEmbedContent
	// batchEmbedContents
	Requests []geminiEmbedContent `json:"requests"`
}

type geminiEmbedContent struct {
	Model                     string         `json:"model"`
	Content                   *geminiContent `json:"content"`
	TaskType                  string         `json:"taskType"`
	Title                     string         `json:"title"`
	OutputDimensionality      *int           `json:"outputDimensionality"`
	OutputDimensionalitySnake *int           `json:"output_dimensionality"`
}

func (e *geminiEmbedContent) dims() *int {
	if e.OutputDimensionality != nil {
		return e.OutputDimensionality
	}
	return e.OutputDimensionalitySnake
}

// decodeGeminiEmbed parses embedContent or batchEmbedContents. The request is
// never nil.
func decodeGeminiEmbed(body []byte, model string, batch bool) (*geminiEmbedRequest, *apiError) {
	req := &geminiEmbedRequest{}
	if e := decodeBody(body, req, provGemini); e != nil {
		return req, e
	}
	check := func(at string, ec *geminiEmbedContent) *apiError {
		if ec.Content == nil || len(ec.Content.Parts) == 0 {
			return &apiError{kind: errInvalid, msg: "* " + at + ".content: content is not specified\n"}
		}
		if d := ec.dims(); d != nil && (*d < 1 || *d > geminiEmbedDims(model)) {
			return &apiError{kind: errInvalid, msg: "* " + at + ".output_dimensionality: must be between 1 and " + strconv.Itoa(geminiEmbedDims(model)) + "\n"}
		}
		return nil
	}
	if !batch {
		return req, check("EmbedContentRequest", &req.geminiEmbedContent)
	}
	if len(req.Requests) == 0 {
		return req, &apiError{kind: errInvalid, msg: "* BatchEmbedContentsRequest.requests: requests is not specified\n"}
	}
	if len(req.Requests) > 100 {
		return req, &apiError{kind: errInvalid, msg: "* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch\n"}
	}
	for i := range req.Requests {
		at := "BatchEmbedContentsRequest.requests[" + strconv.Itoa(i) + "]"
		// Like Gemini, every request names the batch's own model.
		switch m := req.Requests[i].Model; {
		case m == "":
			return req, &apiError{kind: errInvalid, msg: "* " + at + ".model: model is not specified\n"}
		case m != "models/"+model:
			return req, &apiError{kind: errInvalid, msg: "Model name in the request (" + m + ") does not match the model name in the batch request (models/" + model + ")."}
		}
		if e := check(at, &req.Requests[i]); e != nil {
			return req, e
		}
	}
	return req, nil
}

type geminiEmbedding struct {
	Values []float32 `json:"values"`
}

type geminiEmbedResponse struct {
	Embedding geminiEmbedding `json:"embedding"`
}

type geminiBatchEmbedResponse struct {
	Embeddings []geminiEmbedding `json:"embeddings"`
}

// geminiEmbedDims is the default vector size of a Gemini embedding model.
func geminiEmbedDims(model string) int {
	if strings.Contains(model, "gemini-embedding") {
		return 3072
	}
	return 768
}

func (c *call) embedOne(ec *geminiEmbedContent) geminiEmbedding {
	dims := geminiEmbedDims(c.model)
	if d := ec.dims(); d != nil {
		dims = *d
	}
	var b strings.Builder
	for _, p := range ec.Content.Parts {
		b.WriteString(p.Text)
	}
	return geminiEmbedding{Values: textVector(c.model, b.String(), dims)}
}

func (c *call) serveGeminiEmbed() {
	if c.ep == epGeminiEmbed {
		c.writeJSON(&geminiEmbedResponse{Embedding: c.embedOne(&c.gembed.geminiEmbedContent)})
		return
	}
	out := geminiBatchEmbedResponse{Embeddings: make([]geminiEmbedding, len(c.gembed.Requests))}
	for i := range c.gembed.Requests {
		out.Embeddings[i] = c.embedOne(&c.gembed.Requests[i])
	}
	c.writeJSON(&out)
}

// --- vectors ---

// hashSeed is FNV-1a of model and text: the same input embeds the same way.
func hashSeed(model, text string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(model); i++ {
		h = (h ^ uint64(model[i])) * 1099511628211
	}
	h = (h ^ 0xff) * 1099511628211
	for i := 0; i < len(text); i++ {
		h = (h ^ uint64(text[i])) * 1099511628211
	}
	return h
}

// textVector is text's embedding: the normalized sum of one embedVector
// per word (lower-cased runs of letters and digits), so that texts that
// share most of their words have similar vectors — a paraphrase is near,
// another question far — as a real model's are. The same text embeds the
// same way; a text without words embeds by its bytes.
func textVector(model, text string, dims int) []float32 {
	sum := make([]float32, dims)
	words := 0
	for w := range strings.FieldsFuncSeq(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		for i, x := range embedVector(hashSeed(model, w), dims) {
			sum[i] += x
		}
		words++
	}
	if words == 0 {
		return embedVector(hashSeed(model, text), dims)
	}
	var norm float64
	for _, x := range sum {
		norm += float64(x) * float64(x)
	}
	inv := 1 / math.Sqrt(norm)
	for i := range sum {
		sum[i] = float32(float64(sum[i]) * inv)
	}
	return sum
}

// embedVector is a deterministic unit vector drawn from seed (splitmix64).
func embedVector(seed uint64, dims int) []float32 {
	v := make([]float32, dims)
	var norm float64
	for i := range v {
		seed += 0x9e3779b97f4a7c15
		z := seed
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		f := float64(z>>11)/float64(1<<53)*2 - 1
		v[i] = float32(f)
		norm += f * f
	}
	if norm > 0 {
		inv := 1 / math.Sqrt(norm)
		for i := range v {
			v[i] = float32(float64(v[i]) * inv)
		}
	}
	return v
}

// base64Floats encodes little-endian float32s, as encoding_format=base64 does.
func base64Floats(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}
