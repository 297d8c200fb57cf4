package translator

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/wire"
)

func embedTranslator(t *testing.T, body string) (*Translator, error) {
	t.Helper()
	req, err := Decode(wire.InboundEmbeddings, []byte(body))
	if err != nil {
		return nil, err
	}
	tr, err := New(req, Target{Shape: wire.ShapeGemini, Model: "emb", UpstreamModel: "models/gemini-embedding-001", Host: "google"}, testNow)
	if err != nil {
		t.Fatal(err)
	}
	return tr, nil
}

func TestEmbeddingsGemini_Request(t *testing.T) {
	t.Parallel()
	tr, err := embedTranslator(t, `{"model":"emb","input":["a","b"],"dimensions":8,"encoding_format":"base64"}`)
	if err != nil {
		t.Fatal(err)
	}
	up, err := tr.AppendRequest(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"a"}]},"outputDimensionality":8},{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"b"}]},"outputDimensionality":8}]}`
	if string(up) != want || tr.Path() != "/v1beta/models/gemini-embedding-001:batchEmbedContents" || tr.Pair() != "embeddings→gemini" {
		t.Errorf("%s %s\n%s", tr.Pair(), tr.Path(), up)
	}
}

func TestEmbeddingsGemini_Refusals(t *testing.T) {
	t.Parallel()
	many := `"x"` + strings.Repeat(`,"x"`, geminiBatchLimit)
	for _, tt := range []struct {
		body, param string
		kind        error
	}{
		{`{"model":"emb","input":[1,2]}`, "input", wire.ErrUnsupportedFeature},
		{`{"model":"emb","input":[[1],[2]]}`, "input", wire.ErrUnsupportedFeature},
		{`{"model":"emb","input":[` + many + `]}`, "input", wire.ErrUnsupportedFeature},
		{`{"model":"emb","input":"x","user":"u"}`, "user", wire.ErrUnsupportedFeature},
		{`{"model":"emb","input":""}`, "input", wire.ErrMalformedRequest},
		{`{"model":"emb","input":[]}`, "input", wire.ErrMalformedRequest},
		{`{"model":"emb","input":"x","encoding_format":"int8"}`, "encoding_format", wire.ErrMalformedRequest},
		{`{"model":"emb","input":"x","dimensions":0}`, "dimensions", wire.ErrMalformedRequest},
		{`{"model":"emb","input":"x","extra":1}`, "extra", wire.ErrUnsupportedFeature},
	} {
		tr, err := embedTranslator(t, tt.body)
		if err == nil {
			_, err = tr.AppendRequest(nil)
		}
		var we *wire.Error
		if !errors.As(err, &we) || !errors.Is(err, tt.kind) || we.Param != tt.param {
			t.Errorf("%s: %v", tt.body, err)
		}
	}
}

func TestEmbeddingsGemini_Response(t *testing.T) {
	t.Parallel()
	answer := []byte(`{"embeddings":[{"values":[0.5,-0.25,1e-7]},{"values":[1,2,3]}]}`)
	for _, format := range []string{"float", "base64"} {
		tr, _ := embedTranslator(t, `{"model":"emb","input":["a","b"],"encoding_format":"`+format+`"}`)
		if _, err := tr.AppendRequest(nil); err != nil {
			t.Fatal(err)
		}
		out, err := tr.AppendResponse(nil, answer)
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Object string `json:"object"`
			Model  string `json:"model"`
			Data   []struct {
				Object    string          `json:"object"`
				Index     int             `json:"index"`
				Embedding json.RawMessage `json:"embedding"`
			} `json:"data"`
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
				TotalTokens  int `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(out, &list); err != nil || list.Object != "list" || list.Model != "emb" || len(list.Data) != 2 || list.Data[1].Index != 1 {
			t.Fatalf("%s: %s", format, out)
		}
		var got []float32
		if format == "base64" {
			var s string
			_ = json.Unmarshal(list.Data[0].Embedding, &s)
			raw, _ := base64.StdEncoding.DecodeString(s)
			for i := 0; i+4 <= len(raw); i += 4 {
				got = append(got, math.Float32frombits(binary.LittleEndian.Uint32(raw[i:])))
			}
		} else {
			_ = json.Unmarshal(list.Data[0].Embedding, &got)
		}
		if len(got) != 3 || got[0] != 0.5 || got[1] != -0.25 || got[2] != float32(1e-7) {
			t.Errorf("%s: vector %v from %s", format, got, out)
		}
		if tr.Usage() != (wire.Usage{}) {
			t.Errorf("usage %+v", tr.Usage())
		}
	}
	tr, _ := embedTranslator(t, `{"model":"emb","input":["a","b","c"]}`)
	_, _ = tr.AppendRequest(nil)
	if _, err := tr.AppendResponse(nil, answer); !errors.Is(err, wire.ErrUpstream) {
		t.Errorf("two vectors for three inputs: %v", err)
	}
}
