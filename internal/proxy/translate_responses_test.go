package proxy_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	oaopt "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/wire"
)

// openai-go's Responses client judges inbound /v1/responses served through
// openai (Chat Completions), anthropic and gemini bindings: text, streams
// read event by event, parallel function calls with whole arguments and the
// next turn with their outputs, forced tools, limits, usage, errors before
// and during the stream, and Responses state.

var responsesTargets = []wire.Shape{wire.ShapeOpenAI, wire.ShapeAnthropic, wire.ShapeGemini}

func responsesParams(model string) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model:        model,
		Instructions: openai.String("Be brief."),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello there, relay friend")},
	}
}

func responsesTools() []responses.ToolUnionParam {
	return []responses.ToolUnionParam{
		responses.ToolParamOfFunction("get_weather", weatherSchema("city"), false),
		responses.ToolParamOfFunction("get_time", weatherSchema("zone"), false),
	}
}

// respUsage is what a Responses caller's usage means as wire.Usage.
func respUsage(u responses.ResponseUsage) wire.Usage {
	var cw struct {
		D struct {
			CacheWrite int64 `json:"cache_write_tokens"`
		} `json:"input_tokens_details"`
	}
	_ = json.Unmarshal([]byte(u.RawJSON()), &cw)
	return wire.Usage{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.InputTokensDetails.CachedTokens,
		CacheWrite: cw.D.CacheWrite, Reasoning: u.OutputTokensDetails.ReasoningTokens}
}

// streamed is what a Responses stream told its reader, rebuilt from the
// events alone: text, function calls (by item id, with call ids and
// arguments from the deltas), the terminal response, an error event.
type streamed struct {
	text     strings.Builder
	calls    []*streamedCall
	byItem   map[string]*streamedCall
	terminal *responses.Response
	errEvent string
	types    []string
}

type streamedCall struct {
	itemID, callID, name string
	args                 strings.Builder
}

func readResponsesStream(t *testing.T, f *fixture, p responses.ResponseNewParams, opts ...oaopt.RequestOption) *streamed {
	t.Helper()
	s := &streamed{byItem: map[string]*streamedCall{}}
	stream := f.openai(opts...).Responses.NewStreaming(t.Context(), p)
	var seq int64
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != seq {
			t.Errorf("sequence_number %d, want %d", ev.SequenceNumber, seq)
		}
		seq++
		s.types = append(s.types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			s.text.WriteString(ev.Delta)
		case "response.output_item.added":
			if it := ev.Item; it.Type == "function_call" {
				c := &streamedCall{itemID: it.ID, callID: it.CallID, name: it.Name}
				s.calls = append(s.calls, c)
				s.byItem[it.ID] = c
			}
		case "response.function_call_arguments.delta":
			c := s.byItem[ev.ItemID]
			if c == nil {
				t.Fatalf("arguments for an unknown item %q", ev.ItemID)
			}
			c.args.WriteString(ev.Delta)
		case "response.completed", "response.incomplete", "response.failed":
			r := ev.Response
			s.terminal = &r
		case "error":
			s.errEvent = ev.Message
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}

func checkResponseCalls(t *testing.T, what string, calls []responses.ResponseFunctionToolCall) {
	t.Helper()
	want := []string{`get_weather {"city":"example","units":"c"}`, `get_time {"zone":"example","units":"c"}`}
	if len(calls) != 2 {
		t.Fatalf("%s: %d calls", what, len(calls))
	}
	ids := map[string]bool{}
	for i, c := range calls {
		if got := c.Name + " " + c.Arguments; got != want[i] {
			t.Errorf("%s: call %d = %s, want %s", what, i, got, want[i])
		}
		if !strings.HasPrefix(c.CallID, "call_") || !strings.HasPrefix(c.ID, "fc_") || ids[c.CallID] {
			t.Errorf("%s: ids %q / %q", what, c.ID, c.CallID)
		}
		ids[c.CallID] = true
	}
}

func functionCalls(r *responses.Response) []responses.ResponseFunctionToolCall {
	var calls []responses.ResponseFunctionToolCall
	for _, it := range r.Output {
		if it.Type == "function_call" {
			calls = append(calls, it.AsFunctionCall())
		}
	}
	return calls
}

func TestTranslate_OpenAISDK_Responses(t *testing.T) {
	t.Parallel()
	f := translatedFixture(t)
	client := f.openai()
	for _, shape := range responsesTargets {
		up := upstreamNames[shape]
		t.Run(string(shape), func(t *testing.T) {
			t.Run("text", func(t *testing.T) {
				resp, err := client.Responses.New(t.Context(), responsesParams(string(shape)))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(resp.OutputText(), "Hello from "+up) || resp.Status != "completed" || !strings.HasPrefix(resp.ID, "resp_") {
					t.Errorf("response %s", resp.RawJSON())
				}
				rec := f.rec.next(t)
				if got := respUsage(resp.Usage); rec.Usage != got || got.Input == 0 || got.Output == 0 || got.CacheRead == 0 || resp.Usage.TotalTokens != got.Input+got.Output {
					t.Errorf("recorded %+v, caller saw %+v", rec.Usage, got)
				}
				if rec.Upstream != shape || rec.Inbound != "openai_responses" || rec.Status != 200 {
					t.Errorf("record %+v", rec)
				}
			})
			t.Run("stream", func(t *testing.T) {
				s := readResponsesStream(t, f, responsesParams(string(shape)))
				if s.terminal == nil || s.terminal.Status != "completed" || s.text.String() != s.terminal.OutputText() || !strings.HasPrefix(s.text.String(), "Hello from "+up) {
					t.Fatalf("streamed %q, events %v", s.text.String(), s.types)
				}
				if s.types[0] != "response.created" || s.types[1] != "response.in_progress" {
					t.Errorf("events %v", s.types)
				}
				rec := f.rec.next(t)
				if got := respUsage(s.terminal.Usage); rec.Usage != got || got.Input == 0 || got.Output == 0 {
					t.Errorf("recorded %+v, caller saw %+v", rec.Usage, got)
				}
			})
			t.Run("parallel tools and outputs", func(t *testing.T) {
				p := responsesParams(string(shape) + "-parallel")
				p.Tools = responsesTools()
				resp, err := client.Responses.New(t.Context(), p)
				if err != nil {
					t.Fatal(err)
				}
				f.rec.next(t)
				checkResponseCalls(t, "non-stream", functionCalls(resp))

				s := readResponsesStream(t, f, p)
				f.rec.next(t)
				if s.terminal == nil {
					t.Fatalf("no terminal event: %v", s.types)
				}
				final := functionCalls(s.terminal)
				checkResponseCalls(t, "stream", final)
				if len(s.calls) != len(final) {
					t.Fatalf("%d calls streamed, %d in the response", len(s.calls), len(final))
				}
				for i, c := range s.calls {
					if c.callID != final[i].CallID || c.itemID != final[i].ID || c.name != final[i].Name || c.args.String() != final[i].Arguments {
						t.Errorf("streamed call %d %+v, final %s", i, c, final[i].RawJSON())
					}
				}

				// The next turn: the calls and their outputs go back as items.
				items := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("Hello there, relay friend", responses.EasyInputMessageRoleUser)}
				for _, c := range final {
					cp := c.ToParam()
					items = append(items, responses.ResponseInputItemUnionParam{OfFunctionCall: &cp})
				}
				for i, c := range final {
					out := responses.ResponseInputItemParamOfFunctionCallOutput(fmt.Sprintf(`{"temp":%d}`, 20+i))
					out.OfFunctionCallOutput.CallID = openai.String(c.CallID)
					items = append(items, out)
				}
				p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
				resp, err = client.Responses.New(t.Context(), p)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(resp.OutputText(), "The tool returned: ") {
					t.Errorf("reply after the outputs %q", resp.OutputText())
				}
				f.rec.next(t)
				s = readResponsesStream(t, f, p)
				if !strings.HasPrefix(s.text.String(), "The tool returned: ") {
					t.Errorf("streamed reply after the outputs %q", s.text.String())
				}
				f.rec.next(t)
			})
			t.Run("forced tool", func(t *testing.T) {
				p := responsesParams(string(shape))
				p.Tools = responsesTools()
				p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "get_time"}}
				s := readResponsesStream(t, f, p)
				f.rec.next(t)
				if len(s.calls) != 1 || s.calls[0].name != "get_time" || s.calls[0].args.String() != `{"zone":"example","units":"c"}` {
					t.Errorf("forced call %+v", s.calls)
				}
			})
			t.Run("max output tokens", func(t *testing.T) {
				p := responsesParams(string(shape))
				p.MaxOutputTokens = openai.Int(3)
				resp, err := client.Responses.New(t.Context(), p)
				if err != nil {
					t.Fatal(err)
				}
				f.rec.next(t)
				if resp.Status != "incomplete" || resp.IncompleteDetails.Reason != "max_output_tokens" || resp.Usage.OutputTokens != 3 {
					t.Errorf("cut-off response %s", resp.RawJSON())
				}
				s := readResponsesStream(t, f, p)
				f.rec.next(t)
				if s.terminal == nil || s.types[len(s.types)-1] != "response.incomplete" || s.terminal.IncompleteDetails.Reason != "max_output_tokens" {
					t.Errorf("cut-off stream %v", s.types)
				}
			})
		})
	}
}

func TestTranslate_ResponsesErrorsAndState(t *testing.T) {
	t.Parallel()
	f := translatedFixture(t)
	for _, shape := range responsesTargets {
		t.Run(string(shape), func(t *testing.T) {
			// State first: the faults below trip the host key's breaker. An
			// unknown previous response is a 404 naming it (Relay keeps the
			// state of translated responses: responses_state_test.go), and
			// store: true is served.
			p0 := responsesParams(string(shape))
			p0.PreviousResponseID = openai.String("resp_123")
			_, err0 := f.openai().Responses.New(t.Context(), p0)
			var oe0 *openai.Error
			if !errors.As(err0, &oe0) || oe0.StatusCode != 404 || oe0.Param != "previous_response_id" || !strings.Contains(oe0.Message, "resp_123") {
				t.Errorf("previous_response_id: %v", err0)
			}
			f.rec.next(t)
			p0 = responsesParams(string(shape))
			p0.Store = openai.Bool(true)
			if resp, err := f.openai().Responses.New(t.Context(), p0); err != nil || !strings.Contains(resp.RawJSON(), `"store":true`) {
				t.Errorf("store true: %v", err)
			}
			f.rec.next(t)
			p := responsesParams(string(shape))
			p.Store = openai.Bool(false)
			if resp, err := f.openai().Responses.New(t.Context(), p); err != nil || !strings.Contains(resp.RawJSON(), `"store":false`) {
				t.Errorf("store false: %v", err)
			}
			f.rec.next(t)

			_, err := f.openai(oaopt.WithHeader(testFault, "400")).Responses.New(t.Context(), responsesParams(string(shape)))
			var oe *openai.Error
			if !errors.As(err, &oe) || oe.StatusCode != 400 || oe.Type != "invalid_request_error" || oe.Message == "" {
				t.Errorf("4xx: %v", err)
			}
			if rec := f.rec.next(t); rec.ErrorKind != event.KindUpstreamClientError || rec.Status != 400 {
				t.Errorf("4xx record %+v", rec)
			}

			s := readResponsesStream(t, f, responsesParams(string(shape)), oaopt.WithHeader(testFault, "midstream-3"))
			if s.errEvent == "" || s.terminal == nil || s.terminal.Status != "failed" || s.terminal.Error.Message == "" {
				t.Errorf("in-stream error: events %v", s.types)
			}
			if rec := f.rec.next(t); rec.ErrorKind != event.KindStreamError {
				t.Errorf("in-stream record %+v", rec)
			}

			_, body := f.post("/openai/v1/responses", `{"model":"`+string(shape)+`","stream":true,"input":"hi"}`, map[string]string{testFault: "reset-3"})
			if !strings.Contains(body, "event: error\n") || !strings.Contains(body, `"code":"upstream_stream_error"`) || !strings.Contains(body, "event: response.failed\n") {
				t.Errorf("reset: %s", body)
			}
			f.rec.next(t)
		})
	}
	// A binding of the caller's own shape still takes Responses state.
	p := responsesParams(string(wire.ShapeOpenAIResponses))
	p.PreviousResponseID = openai.String("resp_123")
	if _, err := f.openai().Responses.New(t.Context(), p); err != nil {
		t.Errorf("native previous_response_id: %v", err)
	}
	f.rec.next(t)
}

// Anthropic's signed thinking reaches a Responses caller as a reasoning item
// (summary: the thinking; encrypted_content: the signature), and a caller
// that sends its output items back — as the Responses tool loop does —
// gets the thinking replayed to Anthropic, signed, ahead of the tool call.
func TestTranslate_ThinkingRoundTripThroughResponses(t *testing.T) {
	t.Parallel()
	f := translatedFixture(t)
	client := f.openai()
	p := responsesParams("anthropic-thinking")
	p.Tools = responsesTools()
	p.Reasoning = shared.ReasoningParam{Effort: shared.ReasoningEffortLow}
	resp, err := client.Responses.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	f.rec.next(t)
	var reasoning responses.ResponseReasoningItem
	var calls []responses.ResponseFunctionToolCall
	items := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("Hello there, relay friend", responses.EasyInputMessageRoleUser)}
	for _, it := range resp.Output {
		switch it.Type {
		case "reasoning":
			reasoning = it.AsReasoning()
			rp := reasoning.ToParam()
			items = append(items, responses.ResponseInputItemUnionParam{OfReasoning: &rp})
		case "function_call":
			c := it.AsFunctionCall()
			calls = append(calls, c)
			cp := c.ToParam()
			items = append(items, responses.ResponseInputItemUnionParam{OfFunctionCall: &cp})
		}
	}
	if reasoning.EncryptedContent == "" || len(reasoning.Summary) != 1 || reasoning.Summary[0].Text == "" || len(calls) == 0 {
		t.Fatalf("no signed reasoning and calls in %s", resp.RawJSON())
	}
	for _, c := range calls {
		out := responses.ResponseInputItemParamOfFunctionCallOutput("sunny")
		out.OfFunctionCallOutput.CallID = openai.String(c.CallID)
		items = append(items, out)
	}
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
	if _, err := client.Responses.New(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	f.rec.next(t)
	up := f.requests()
	last := up[len(up)-1]
	var sent struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type, Signature, Thinking, ID string
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(last.Body, &sent); err != nil || len(sent.Messages) != 3 {
		t.Fatalf("upstream body %s", last.Body)
	}
	a := sent.Messages[1].Content
	if a[0].Type != "thinking" || a[0].Thinking != reasoning.Summary[0].Text || "rant_"+a[0].Signature != reasoning.EncryptedContent ||
		a[len(a)-1].Type != "tool_use" || !strings.HasPrefix(a[len(a)-1].ID, "toolu_") {
		t.Errorf("assistant turn sent upstream: %s", last.Body)
	}
}
