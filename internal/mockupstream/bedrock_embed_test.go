package mockupstream

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	brtypes "github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
)

// aws-sdk-go-v2's InvokeModel drives the embedding models: Titan v2 with
// its dimensions, Titan v1, Cohere v3 with and without embedding_types;
// each answer is the family's own JSON with unit vectors of the size
// asked, the same text embedding the same way, and the token count header.
// What Bedrock refuses — an unknown key, a missing input_type, a dimension
// Titan does not have, a stream — is a ValidationException.
func TestBedrock_EmbeddingsWithTheSDK(t *testing.T) {
	t.Parallel()
	_, srv := bedrockSetup(t, "eu-west-3")
	cl := bedrockClient(srv, "eu-west-3", testAWS)
	ctx := context.Background()
	invoke := func(model, body string) ([]byte, error) {
		out, err := cl.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String(model), Body: []byte(body), ContentType: aws.String("application/json"), Accept: aws.String("application/json")})
		if err != nil {
			return nil, err
		}
		return out.Body, nil
	}
	unit := func(v []float32) bool {
		var n float64
		for _, f := range v {
			n += float64(f) * float64(f)
		}
		return math.Abs(n-1) < 1e-4
	}
	for _, tc := range []struct {
		model, body string
		dims, n     int
	}{
		{"amazon.titan-embed-text-v2:0", `{"inputText":"hello","dimensions":256,"normalize":true}`, 256, 1},
		{"amazon.titan-embed-text-v2:0", `{"inputText":"hello"}`, 1024, 1},
		{"amazon.titan-embed-text-v1", `{"inputText":"hello"}`, 1536, 1},
		{"cohere.embed-english-v3", `{"texts":["hello","world"],"input_type":"search_document"}`, 1024, 2},
		{"cohere.embed-multilingual-v3", `{"texts":["hello"],"input_type":"search_query","embedding_types":["float"]}`, 1024, 1},
	} {
		body, err := invoke(tc.model, tc.body)
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		var vs [][]float32
		if strings.HasPrefix(tc.model, "amazon.") {
			var q struct {
				Embedding []float32 `json:"embedding"`
				Tokens    int       `json:"inputTextTokenCount"`
			}
			if json.Unmarshal(body, &q) != nil || q.Tokens == 0 {
				t.Fatalf("%s: %s", tc.model, body)
			}
			vs = [][]float32{q.Embedding}
		} else {
			var q struct {
				ResponseType string          `json:"response_type"`
				Embeddings   json.RawMessage `json:"embeddings"`
			}
			_ = json.Unmarshal(body, &q)
			if strings.Contains(tc.body, "embedding_types") {
				var by struct{ Float [][]float32 }
				if q.ResponseType != "embeddings_by_type" || json.Unmarshal(q.Embeddings, &by) != nil {
					t.Fatalf("%s: %s", tc.model, body)
				}
				vs = by.Float
			} else if q.ResponseType != "embeddings_floats" || json.Unmarshal(q.Embeddings, &vs) != nil {
				t.Fatalf("%s: %s", tc.model, body)
			}
		}
		if len(vs) != tc.n {
			t.Fatalf("%s: %d vectors, want %d", tc.model, len(vs), tc.n)
		}
		for _, v := range vs {
			if len(v) != tc.dims || !unit(v) {
				t.Fatalf("%s: a vector of %d, want a unit vector of %d", tc.model, len(v), tc.dims)
			}
		}
	}
	a, _ := invoke("amazon.titan-embed-text-v2:0", `{"inputText":"same"}`)
	b, _ := invoke("amazon.titan-embed-text-v2:0", `{"inputText":"same"}`)
	if string(a) != string(b) {
		t.Error("the same text embedded two ways")
	}

	for _, tc := range []struct{ model, body, want string }{
		{"amazon.titan-embed-text-v2:0", `{"inputText":"x","extra":1}`, "extraneous key [extra]"},
		{"amazon.titan-embed-text-v1", `{"inputText":"x","dimensions":256}`, "extraneous key [dimensions]"},
		{"amazon.titan-embed-text-v2:0", `{"inputText":"x","dimensions":300}`, "dimensions"},
		{"amazon.titan-embed-text-v2:0", `{}`, "inputText"},
		{"cohere.embed-english-v3", `{"texts":["x"]}`, "input_type"},
	} {
		_, err := invoke(tc.model, tc.body)
		var ve *brtypes.ValidationException
		if !errors.As(err, &ve) || !strings.Contains(ve.ErrorMessage(), tc.want) {
			t.Errorf("%s %s: %v", tc.model, tc.body, err)
		}
	}
	_, err := cl.InvokeModelWithResponseStream(ctx, &bedrockruntime.InvokeModelWithResponseStreamInput{ModelId: aws.String("cohere.embed-english-v3"), Body: []byte(`{"texts":["x"],"input_type":"search_query"}`)})
	var ve *brtypes.ValidationException
	if !errors.As(err, &ve) {
		t.Errorf("a streamed embedding: %v", err)
	}
}
