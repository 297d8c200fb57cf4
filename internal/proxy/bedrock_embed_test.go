package proxy_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// OpenAI embeddings callers served by Bedrock's embedding models through a
// bedrock_converse binding: openai-go through Relay, a SigV4-signed
// InvokeModel at /model/{id}/invoke on the mock with Titan's and Cohere's
// own bodies; Titan's token count reaches the caller and the ledger, and
// what a model cannot take is a 400 in OpenAI's shape that never reaches
// Bedrock.
func TestBedrock_EmbeddingsThroughInvokeModel(t *testing.T) {
	t.Parallel()
	f := bedrockFixture(t, func(f *fixture, h *snapshot.Host) {
		for name, up := range map[string]string{"titan-emb": "amazon.titan-embed-text-v2:0", "cohere-emb": "cohere.embed-english-v3"} {
			m := f.model(name, true)
			m.Kind = "embedding"
			f.bind(m, h, wire.ShapeBedrockConverse, up)
		}
	})
	client := f.openai()

	titan, err := client.Embeddings.New(t.Context(), openai.EmbeddingNewParams{
		Model: "titan-emb", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hello bedrock")}, Dimensions: openai.Int(256),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(titan.Data) != 1 || len(titan.Data[0].Embedding) != 256 || titan.Model != "titan-emb" || titan.Usage.PromptTokens == 0 {
		t.Fatalf("titan %s", titan.RawJSON())
	}
	up := f.waitFor(func(r mockupstream.Request) bool { return r.Shape == mockupstream.ShapeBedrockEmbeddings })
	if up.Path != "/model/amazon.titan-embed-text-v2:0/invoke" || up.Status != http.StatusOK || !strings.Contains(up.Header.Get("Authorization"), awsKeyID) {
		t.Errorf("upstream %s %d %v", up.Path, up.Status, up.Header)
	}
	rec := f.rec.next(t)
	if rec.Usage.Input != titan.Usage.PromptTokens || rec.Upstream != wire.ShapeBedrockConverse || rec.Inbound != "openai_embeddings" || rec.Status != http.StatusOK {
		t.Errorf("record %+v", rec)
	}

	cohere, err := client.Embeddings.New(t.Context(), openai.EmbeddingNewParams{
		Model: "cohere-emb", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"one", "two", "three"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cohere.Data) != 3 || len(cohere.Data[2].Embedding) != 1024 || cohere.Data[2].Index != 2 {
		t.Fatalf("cohere %s", cohere.RawJSON())
	}
	f.rec.next(t)

	before := len(f.requests())
	for _, tc := range []struct{ body, param string }{
		{`{"model":"titan-emb","input":["a","b"]}`, "input"},
		{`{"model":"cohere-emb","input":"a","dimensions":256}`, "dimensions"},
	} {
		resp, body := f.post("/v1/embeddings", tc.body, nil)
		if e := decodeError(t, body); resp.StatusCode != http.StatusBadRequest || e.Error.Param == nil || *e.Error.Param != tc.param {
			t.Errorf("%s: %d %s", tc.body, resp.StatusCode, body)
		}
	}
	if n := len(f.requests()); n != before {
		t.Errorf("%d refused requests reached Bedrock", n-before)
	}
}
