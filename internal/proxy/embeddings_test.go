package proxy_test

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/wire"
)

// OpenAI embeddings callers served by a gemini binding: openai-go's
// embeddings client through Relay, batchEmbedContents on the mock.
func TestEmbeddings_ThroughGemini(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	h := f.host("google")
	f.key(h, "g-1", geminiSecret)
	m := f.model("gem-emb", true)
	m.Kind = "embedding"
	f.bind(m, h, wire.ShapeGemini, "gemini-embedding-001")
	f.start()
	client := f.openai()

	resp, err := client.Embeddings.New(t.Context(), openai.EmbeddingNewParams{
		Model:      "gem-emb",
		Input:      openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"one", "two", "three"}},
		Dimensions: openai.Int(256),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Data) != 3 || resp.Model != "gem-emb" || resp.Object != "list" {
		t.Fatalf("embeddings %s", resp.RawJSON())
	}
	for i, d := range resp.Data {
		if d.Index != int64(i) || len(d.Embedding) != 256 || d.Object != "embedding" {
			t.Errorf("datum %d: index %d, %d values", i, d.Index, len(d.Embedding))
		}
	}
	up := f.waitFor(func(r mockupstream.Request) bool { return strings.Contains(r.Path, ":batchEmbedContents") })
	if up.Path != "/v1beta/models/gemini-embedding-001:batchEmbedContents" || up.Status != 200 {
		t.Errorf("upstream %s %d", up.Path, up.Status)
	}
	// Gemini reports no token count: Relay reports and records none.
	rec := f.rec.next(t)
	if resp.Usage.PromptTokens != 0 || resp.Usage.TotalTokens != 0 || rec.Usage != (wire.Usage{}) || rec.Upstream != wire.ShapeGemini || rec.Inbound != "openai_embeddings" || rec.Status != 200 {
		t.Errorf("usage %+v, record %+v", resp.Usage, rec)
	}

	// One string, and base64: the same vector, as little-endian float32s.
	one, err := client.Embeddings.New(t.Context(), openai.EmbeddingNewParams{
		Model: "gem-emb", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("two")}, Dimensions: openai.Int(256),
	})
	if err != nil || len(one.Data) != 1 {
		t.Fatalf("one input: %v", err)
	}
	f.rec.next(t)
	_, body := f.post("/v1/embeddings", `{"model":"gem-emb","input":"two","dimensions":256,"encoding_format":"base64"}`, nil)
	var b64 struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &b64); err != nil || len(b64.Data) != 1 {
		t.Fatalf("base64 answer %s", body)
	}
	raw, err := base64.StdEncoding.DecodeString(b64.Data[0].Embedding)
	if err != nil || len(raw) != 4*256 {
		t.Fatalf("base64 %d bytes, %v", len(raw), err)
	}
	for i := range 256 {
		got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		if got != float32(one.Data[0].Embedding[i]) || got != float32(resp.Data[1].Embedding[i]) {
			t.Fatalf("value %d: base64 %v, float %v", i, got, one.Data[0].Embedding[i])
		}
	}
	f.rec.next(t)

	// Token arrays cannot be translated: a 400 naming input.
	for _, bad := range []string{`[1,2,3]`, `[[1,2],[3]]`} {
		resp, body := f.post("/v1/embeddings", `{"model":"gem-emb","input":`+bad+`}`, nil)
		e := decodeError(t, body)
		if resp.StatusCode != 400 || e.Error.Param == nil || *e.Error.Param != "input" || e.Error.Code != "unsupported_feature" {
			t.Errorf("token input %s: %d %s", bad, resp.StatusCode, body)
		}
		f.rec.next(t)
	}
	// An upstream error comes back in OpenAI's shape with its status.
	r, body := f.post("/v1/embeddings", `{"model":"gem-emb","input":"x","dimensions":99999}`, nil)
	if e := decodeError(t, body); r.StatusCode != 400 || e.Error.Message == "" || e.Error.Type != "invalid_request_error" {
		t.Errorf("upstream 400: %d %s", r.StatusCode, body)
	}
	f.rec.next(t)
}
