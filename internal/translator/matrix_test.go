package translator

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/wire"
)

// The support matrix is the code's own answer: every cell is checked
// against what the translators do with a request that uses the feature,
// and docs/translation.md holds exactly the table MatrixMarkdown renders.

const png1x1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// Request bodies that each use one feature, per caller shape.
var chatSamples = map[Feature]string{
	FeatSystem:          `"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]`,
	FeatSystemMid:       `"messages":[{"role":"user","content":"hi"},{"role":"system","content":"s"},{"role":"user","content":"go"}]`,
	FeatSameRoleTurns:   `"messages":[{"role":"user","content":"hi"},{"role":"user","content":"again"}]`,
	FeatMessageName:     `"messages":[{"role":"user","content":"hi","name":"ada"}]`,
	FeatImageBase64:     `"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + png1x1 + `"}}]}]`,
	FeatImageURL:        `"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]`,
	FeatImageDetail:     `"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + png1x1 + `","detail":"high"}}]}]`,
	FeatAudioInput:      `"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}]}]`,
	FeatFileInput:       `"messages":[{"role":"user","content":[{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERi0=","filename":"a.pdf"}}]}]`,
	FeatTools:           `"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`,
	FeatToolStrict:      `"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","strict":true,"parameters":{"type":"object"}}}]`,
	FeatToolChoice:      `"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}}`,
	FeatParallelOff:     `"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"parallel_tool_calls":false`,
	FeatTopK:            `"messages":[{"role":"user","content":"hi"}],"top_k":5`,
	FeatCacheControl:    `"messages":[{"role":"system","content":"be brief","cache_control":{"type":"ephemeral"}},{"role":"user","content":"hi","cache_control":{"type":"ephemeral"}}]`,
	FeatToolHistory:     `"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"ok"}],"tools":[{"type":"function","function":{"name":"f"}}]`,
	FeatThinkingHistory: `"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo","thinking_blocks":[{"type":"thinking","thinking":"t","signature":"sig"}]},{"role":"user","content":"go"}]`,
	FeatReasoning:       `"messages":[{"role":"user","content":"hi"}],"reasoning_effort":"medium"`,
	FeatMaxTokens:       `"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":100`,
	FeatTemperature:     `"messages":[{"role":"user","content":"hi"}],"temperature":0.5`,
	FeatTopP:            `"messages":[{"role":"user","content":"hi"}],"top_p":0.9`,
	FeatStop:            `"messages":[{"role":"user","content":"hi"}],"stop":["x"]`,
	FeatN:               `"messages":[{"role":"user","content":"hi"}],"n":2`,
	FeatLogprobs:        `"messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":2`,
	FeatLogitBias:       `"messages":[{"role":"user","content":"hi"}],"logit_bias":{"50256":-100}`,
	FeatSeed:            `"messages":[{"role":"user","content":"hi"}],"seed":7`,
	FeatPenalties:       `"messages":[{"role":"user","content":"hi"}],"presence_penalty":0.5`,
	FeatJSONObject:      `"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}`,
	FeatJSONSchema:      `"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"object"}}}`,
	FeatVerbosity:       `"messages":[{"role":"user","content":"hi"}],"verbosity":"low"`,
	FeatMetadata:        `"messages":[{"role":"user","content":"hi"}],"metadata":{"a":"b"}`,
	FeatUser:            `"messages":[{"role":"user","content":"hi"}],"safety_identifier":"u1"`,
	FeatServiceTier:     `"messages":[{"role":"user","content":"hi"}],"service_tier":"auto"`,
	FeatStore:           `"messages":[{"role":"user","content":"hi"}],"store":true`,
	FeatPromptCacheKey:  `"messages":[{"role":"user","content":"hi"}],"prompt_cache_key":"k"`,
	FeatPrefill:         `"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"Well,"}]`,
	FeatStreaming:       `"messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}`,
}

var messagesSamples = map[Feature]string{
	FeatSystem:          `"system":"s","messages":[{"role":"user","content":"hi"}]`,
	FeatSystemMid:       `"messages":[{"role":"user","content":"hi"},{"role":"system","content":[{"type":"text","text":"s"}]},{"role":"user","content":"go"}]`,
	FeatSameRoleTurns:   `"messages":[{"role":"user","content":"hi"},{"role":"user","content":"again"}]`,
	FeatImageBase64:     `"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png1x1 + `"}}]}]`,
	FeatImageURL:        `"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]}]`,
	FeatFileInput:       `"messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0="}}]}]`,
	FeatTools:           `"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{"type":"object"}}]`,
	FeatToolStrict:      `"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","strict":true,"input_schema":{"type":"object"}}]`,
	FeatToolChoice:      `"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"f"}`,
	FeatParallelOff:     `"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto","disable_parallel_tool_use":true}`,
	FeatToolHistory:     `"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}]`,
	FeatToolResultError: `"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"boom","is_error":true}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}]`,
	FeatToolResultImage: `"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png1x1 + `"}}]}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}]`,
	FeatThinkingHistory: `"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"sig"},{"type":"text","text":"yo"}]},{"role":"user","content":"go"}]`,
	FeatReasoning:       `"messages":[{"role":"user","content":"hi"}],"thinking":{"type":"enabled","budget_tokens":2048}`,
	FeatMaxTokens:       `"messages":[{"role":"user","content":"hi"}]`,
	FeatTemperature:     `"messages":[{"role":"user","content":"hi"}],"temperature":0.5`,
	FeatTopP:            `"messages":[{"role":"user","content":"hi"}],"top_p":0.9`,
	FeatTopK:            `"messages":[{"role":"user","content":"hi"}],"top_k":5`,
	FeatStop:            `"messages":[{"role":"user","content":"hi"}],"stop_sequences":["x"]`,
	FeatJSONSchema:      `"messages":[{"role":"user","content":"hi"}],"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}}`,
	FeatUser:            `"messages":[{"role":"user","content":"hi"}],"metadata":{"user_id":"u1"}`,
	FeatServiceTier:     `"messages":[{"role":"user","content":"hi"}],"service_tier":"auto"`,
	FeatCacheControl:    `"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]`,
	FeatPrefill:         `"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"Well,"}]`,
	FeatStreaming:       `"messages":[{"role":"user","content":"hi"}],"stream":true`,
}

var responsesTool = `"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]`

var responsesSamples = map[Feature]string{
	FeatSystem:          `"instructions":"s","input":"hi"`,
	FeatSystemMid:       `"input":[{"role":"user","content":"hi"},{"role":"system","content":"s"},{"role":"user","content":"go"}]`,
	FeatSameRoleTurns:   `"input":[{"role":"user","content":"hi"},{"role":"user","content":"again"}]`,
	FeatImageBase64:     `"input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,` + png1x1 + `"}]}]`,
	FeatImageURL:        `"input":[{"role":"user","content":[{"type":"input_image","image_url":"https://example.com/a.png"}]}]`,
	FeatImageDetail:     `"input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,` + png1x1 + `","detail":"high"}]}]`,
	FeatFileInput:       `"input":[{"role":"user","content":[{"type":"input_file","file_data":"data:application/pdf;base64,JVBERi0=","filename":"a.pdf"}]}]`,
	FeatTools:           `"input":"hi",` + responsesTool,
	FeatToolStrict:      `"input":"hi","tools":[{"type":"function","name":"f","strict":true,"parameters":{"type":"object"}}]`,
	FeatToolChoice:      `"input":"hi",` + responsesTool + `,"tool_choice":{"type":"function","name":"f"}`,
	FeatParallelOff:     `"input":"hi",` + responsesTool + `,"parallel_tool_calls":false`,
	FeatToolHistory:     `"input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"call_1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"call_1","output":"ok"}],` + responsesTool,
	FeatToolResultImage: `"input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"call_1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"call_1","output":[{"type":"input_image","image_url":"data:image/png;base64,` + png1x1 + `"}]}],` + responsesTool,
	FeatThinkingHistory: `"input":[{"role":"user","content":"hi"},{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"t"}],"encrypted_content":"rant_sig"},{"role":"assistant","content":"yo"},{"role":"user","content":"go"}]`,
	FeatReasoning:       `"input":"hi","reasoning":{"effort":"medium"}`,
	FeatMaxTokens:       `"input":"hi","max_output_tokens":100`,
	FeatTemperature:     `"input":"hi","temperature":0.5`,
	FeatTopP:            `"input":"hi","top_p":0.9`,
	FeatJSONObject:      `"input":"hi","text":{"format":{"type":"json_object"}}`,
	FeatJSONSchema:      `"input":"hi","text":{"format":{"type":"json_schema","name":"a","schema":{"type":"object"}}}`,
	FeatVerbosity:       `"input":"hi","text":{"verbosity":"low"}`,
	FeatMetadata:        `"input":"hi","metadata":{"a":"b"}`,
	FeatUser:            `"input":"hi","safety_identifier":"u1"`,
	FeatServiceTier:     `"input":"hi","service_tier":"auto"`,
	FeatStore:           `"input":"hi","store":true`,
	FeatPromptCacheKey:  `"input":"hi","prompt_cache_key":"k"`,
	FeatPrefill:         `"input":[{"role":"user","content":"hi"},{"role":"assistant","content":"Well,"}]`,
	FeatStreaming:       `"input":"hi","stream":true`,
	FeatState:           `"input":"hi","conversation":"conv_1"`,
}

func sampleBody(in wire.Inbound, f Feature) (string, bool) {
	if in == wire.InboundGemini {
		s, ok := geminiSamples[f]
		return `{` + s + `}`, ok
	}
	if in == wire.InboundResponses {
		s, ok := responsesSamples[f]
		return `{"model":"m",` + s + `}`, ok
	}
	if in == wire.InboundGenerate {
		s, ok := generateSamples[f]
		return `{"model":"m","max_output_tokens":4000,` + s + `}`, ok
	}
	if in == wire.InboundChat {
		s, ok := chatSamples[f]
		return `{"model":"m",` + s + `}`, ok
	}
	s, ok := messagesSamples[f]
	return `{"model":"m","max_tokens":4000,` + s + `}`, ok
}

func TestMatrix_MatchesBehaviour(t *testing.T) {
	t.Parallel()
	for _, c := range Matrix() {
		p := pairByDir(strings.ReplaceAll(c.Pair, "→", "_"))
		if c.Support == NotApplicable {
			if _, ok := sampleBody(p.in, c.Feature); ok {
				t.Errorf("%s has a %s sample but its shape cannot express it", c.Feature, p.in)
			}
			continue
		}
		body, ok := sampleBody(p.in, c.Feature)
		if !ok {
			t.Errorf("no %s sample for %s", p.in, c.Feature)
			continue
		}
		req, err := Decode(p.in, []byte(body))
		if err != nil {
			t.Errorf("%s %s: decode: %v", c.Pair, c.Feature, err)
			continue
		}
		tr, _ := New(req, Target{Shape: p.up, Model: "m", UpstreamModel: "u", Host: "h"}, testNow)
		_, err = tr.AppendRequest(nil)
		var we *wire.Error
		switch {
		case c.Support == Rejected && err == nil:
			t.Errorf("%s %s: the matrix says rejected, the request went through", c.Pair, c.Feature)
		case c.Support == Rejected && (!errors.As(err, &we) || !errors.Is(err, wire.ErrUnsupportedFeature) || we.Param == "" || !strings.HasPrefix(c.Feature.Field(p.in), we.Param)):
			t.Errorf("%s %s: want a 400 naming %q, got %v", c.Pair, c.Feature, c.Feature.Field(p.in), err)
		case c.Support != Rejected && err != nil:
			t.Errorf("%s %s: the matrix says %s, got %v", c.Pair, c.Feature, c.Support, err)
		case c.Support == Emulated && c.Note == "", c.Support == Rejected && c.Note == "":
			t.Errorf("%s %s: %s without a note saying why", c.Pair, c.Feature, c.Support)
		}
	}
}

const (
	docPath     = "../../docs/translation.md"
	matrixBegin = "<!-- support matrix: generated by TestMatrix_Doc; go test ./internal/translator -run TestMatrix_Doc -update -->\n"
	matrixEnd   = "<!-- end of support matrix -->\n"
)

func TestMatrix_Doc(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(doc, []byte(matrixBegin)), bytes.Index(doc, []byte(matrixEnd))
	if i < 0 || j < i {
		t.Fatalf("%s lacks the matrix markers", docPath)
	}
	want := MatrixMarkdown()
	got := string(doc[i+len(matrixBegin) : j])
	if got == want {
		return
	}
	if *update {
		out := append(append(append([]byte{}, doc[:i+len(matrixBegin)]...), want...), doc[j:]...)
		if err := os.WriteFile(docPath, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's support matrix is not the code's; run go test ./internal/translator -run TestMatrix_Doc -update", docPath)
}
