package translator

import (
	"errors"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/wire"
)

func bedrockEmbedTranslator(t *testing.T, model, body string) (*Translator, error) {
	t.Helper()
	req, err := Decode(wire.InboundEmbeddings, []byte(body))
	if err != nil {
		return nil, err
	}
	tr, err := New(req, Target{Shape: wire.ShapeBedrockConverse, Model: "emb", UpstreamModel: model, Host: "bedrock"}, testNow)
	if err != nil {
		t.Fatal(err)
	}
	return tr, nil
}

// Titan and Cohere each get their own InvokeModel body at
// /model/{id}/invoke, and their answers come back as OpenAI's list.
func TestEmbeddingsConverse_RequestAndResponse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		model, body, wantReq, answer, wantResp string
	}{
		{"amazon.titan-embed-text-v2:0", `{"model":"emb","input":"a","dimensions":256}`,
			`{"inputText":"a","dimensions":256,"normalize":true}`,
			`{"embedding":[0.5,-0.25],"inputTextTokenCount":3}`,
			`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,-0.25]}],"model":"emb","usage":{"prompt_tokens":3,"total_tokens":3}}`},
		{"amazon.titan-embed-text-v1", `{"model":"emb","input":["a"]}`,
			`{"inputText":"a"}`,
			`{"embedding":[1],"inputTextTokenCount":1}`,
			`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1]}],"model":"emb","usage":{"prompt_tokens":1,"total_tokens":1}}`},
		{"cohere.embed-english-v3", `{"model":"emb","input":["a","b"]}`,
			`{"texts":["a","b"],"input_type":"search_document","embedding_types":["float"]}`,
			`{"id":"x","response_type":"embeddings_by_type","embeddings":{"float":[[0.5],[2]]},"texts":["a","b"]}`,
			`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5]},{"object":"embedding","index":1,"embedding":[2]}],"model":"emb","usage":{"prompt_tokens":0,"total_tokens":0}}`},
		{"us.cohere.embed-v4:0", `{"model":"emb","input":"a","dimensions":256}`,
			`{"texts":["a"],"input_type":"search_document","embedding_types":["float"],"output_dimension":256}`,
			`{"id":"x","response_type":"embeddings_floats","embeddings":[[0.5]],"texts":["a"]}`,
			`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5]}],"model":"emb","usage":{"prompt_tokens":0,"total_tokens":0}}`},
	} {
		tr, err := bedrockEmbedTranslator(t, tc.model, tc.body)
		if err != nil {
			t.Fatal(err)
		}
		up, err := tr.AppendRequest(nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		if string(up) != tc.wantReq || tr.Path() != "/model/"+escapeModelID(tc.model)+"/invoke" || tr.Pair() != "embeddings→converse" {
			t.Errorf("%s: %s %s\n%s", tc.model, tr.Pair(), tr.Path(), up)
		}
		out, err := tr.AppendResponse(nil, []byte(tc.answer))
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		if strings.TrimSpace(string(out)) != tc.wantResp {
			t.Errorf("%s:\n got %s\nwant %s", tc.model, out, tc.wantResp)
		}
	}
}

// What a Bedrock embedding model cannot take is a 400 naming the field;
// an answer with the wrong number of vectors is an error, not a short list.
func TestEmbeddingsConverse_Refusals(t *testing.T) {
	t.Parallel()
	many := `"x"` + strings.Repeat(`,"x"`, cohereBatchLimit)
	for _, tt := range []struct {
		model, body, param string
	}{
		{"amazon.titan-embed-text-v2:0", `{"model":"emb","input":["a","b"]}`, "input"},
		{"amazon.titan-embed-text-v2:0", `{"model":"emb","input":"a","dimensions":300}`, "dimensions"},
		{"amazon.titan-embed-text-v1", `{"model":"emb","input":"a","dimensions":256}`, "dimensions"},
		{"cohere.embed-english-v3", `{"model":"emb","input":[` + many + `]}`, "input"},
		{"cohere.embed-english-v3", `{"model":"emb","input":"a","dimensions":256}`, "dimensions"},
		{"cohere.embed-english-v3", `{"model":"emb","input":"a","user":"u"}`, "user"},
		{"meta.llama3-70b-instruct-v1:0", `{"model":"emb","input":"a"}`, "model"},
	} {
		tr, err := bedrockEmbedTranslator(t, tt.model, tt.body)
		if err == nil {
			_, err = tr.AppendRequest(nil)
		}
		var we *wire.Error
		if !errors.As(err, &we) || !errors.Is(err, wire.ErrUnsupportedFeature) || we.Param != tt.param {
			t.Errorf("%s %s: %v", tt.model, tt.body, err)
		}
	}
	tr, _ := bedrockEmbedTranslator(t, "cohere.embed-english-v3", `{"model":"emb","input":["a","b"]}`)
	if _, err := tr.AppendRequest(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.AppendResponse(nil, []byte(`{"response_type":"embeddings_floats","embeddings":[[1]]}`)); err == nil {
		t.Error("one vector for two inputs was accepted")
	}
}
