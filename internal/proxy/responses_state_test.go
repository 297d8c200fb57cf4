package proxy_test

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	oaopt "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/respstore"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Stateful Responses on bindings that keep no state, judged by openai-go:
// a three-turn conversation with a tool round trip, continued by
// previous_response_id or by item references (as the AI SDK does with
// store on), plain and streamed, on every shape; a conversation that fails
// over to another shape mid-way; GET, DELETE, input_items and cancel; other
// projects' ids; the bounds.

// otherKey is a relay key of a second project with the same policy.
const otherKey = "sk-wr-test-other-project-0123456789ab"

func statefulFixture(t *testing.T, store respstore.Store) *fixture {
	t.Helper()
	f := newFixture(t)
	f.cfg.Responses = store
	for _, shape := range append(responsesTargets[:len(responsesTargets):len(responsesTargets)], wire.ShapeOpenAIResponses) {
		h := f.host("h-" + string(shape))
		f.key(h, "k-"+string(shape), "sk-up-"+string(shape)+"-secret-1")
		f.bind(f.model(string(shape), true), h, shape, upstreamNames[shape]+"-cached")
	}
	// A model bound first to anthropic (whose host forwards the fixture's
	// fault header) and then to gemini (whose host does not): a fault
	// moves the conversation between shapes.
	an := f.host("fo-anthropic")
	f.key(an, "k-fo-an", "sk-up-fo-an-secret-1")
	ge := f.host("fo-gemini", func(h *snapshot.Host) { h.ForwardHeaders = nil })
	f.key(ge, "k-fo-ge", "sk-up-fo-ge-secret-1")
	fo := f.model("failover", true)
	f.bind(fo, an, wire.ShapeAnthropic, upstreamNames[wire.ShapeAnthropic]+"-cached")
	f.bind(fo, ge, wire.ShapeGemini, upstreamNames[wire.ShapeGemini]+"-cached")
	// One that begins on openai_responses (the upstream keeps the state,
	// Relay a copy) and moves to anthropic.
	oa := f.host("fo-responses")
	f.key(oa, "k-fo-oa", "sk-up-fo-oa-secret-1")
	an2 := f.host("fo-anthropic-2", func(h *snapshot.Host) { h.ForwardHeaders = nil })
	f.key(an2, "k-fo-an2", "sk-up-fo-an2-secret-1")
	fn := f.model("failover-native", true)
	f.bind(fn, oa, wire.ShapeOpenAIResponses, upstreamNames[wire.ShapeOpenAIResponses]+"-cached")
	f.bind(fn, an2, wire.ShapeAnthropic, upstreamNames[wire.ShapeAnthropic]+"-cached")
	for _, m := range f.data.Models {
		m.MaxOutputTokens = 8192
	}
	// A second project, same policy.
	team := f.data.Teams[0]
	p2 := &snapshot.Project{ID: f.id(), TeamID: team.ID, Slug: "other"}
	sa2 := &snapshot.ServiceAccount{ID: f.id(), ProjectID: p2.ID, Slug: "other-app", PolicyID: f.policy.ID}
	f.data.Projects = append(f.data.Projects, p2)
	f.data.ServiceAccounts = append(f.data.ServiceAccounts, sa2)
	f.data.RelayKeys = append(f.data.RelayKeys, &snapshot.RelayKey{ID: f.id(), Hash: sha256.Sum256([]byte(otherKey)), DisplayPrefix: otherKey[:10], ProjectID: p2.ID, ServiceAccountID: sa2.ID})
	f.secrets = append(f.secrets, otherKey)
	f.start()
	return f
}

// turn sends p, plain or streamed, and returns the response.
func turn(t *testing.T, f *fixture, stream bool, p responses.ResponseNewParams, opts ...oaopt.RequestOption) *responses.Response {
	t.Helper()
	defer f.rec.next(t)
	if stream {
		s := readResponsesStream(t, f, p, opts...)
		if s.terminal == nil || s.terminal.Status != "completed" {
			t.Fatalf("stream ended without a completed response: %v", s.types)
		}
		return s.terminal
	}
	resp, err := f.openai(opts...).Responses.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func weatherTool() []responses.ToolUnionParam {
	return []responses.ToolUnionParam{responses.ToolParamOfFunction("get_weather", weatherSchema("city"), false)}
}

// conversation runs three turns on model: a forced tool call, the tool's
// output, a follow-up; by previous_response_id, or by item references when
// refs. It returns the three responses.
func conversation(t *testing.T, f *fixture, model, city string, stream, refs bool, second ...oaopt.RequestOption) [3]*responses.Response {
	t.Helper()
	var out [3]*responses.Response
	user := responses.ResponseInputItemParamOfMessage("What is the weather in "+city+"?", responses.EasyInputMessageRoleUser)
	p := responses.ResponseNewParams{Model: model, Tools: weatherTool(),
		Input:      responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{user}},
		ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "get_weather"}},
	}
	out[0] = turn(t, f, stream, p)
	calls := functionCalls(out[0])
	if len(calls) != 1 || !strings.HasPrefix(out[0].ID, "resp_") || !strings.HasPrefix(calls[0].ID, "fc_") {
		t.Fatalf("turn 1: %s", out[0].RawJSON())
	}
	output := responses.ResponseInputItemParamOfFunctionCallOutput(`{"sky":"sunny-and-mild"}`)
	output.OfFunctionCallOutput.CallID = openai.String(calls[0].CallID)
	p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{}
	if refs {
		p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			user, responses.ResponseInputItemParamOfItemReference(calls[0].ID), output}}
	} else {
		p.PreviousResponseID = openai.String(out[0].ID)
		p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{output}}
	}
	out[1] = turn(t, f, stream, p, second...)
	if !strings.HasPrefix(out[1].OutputText(), "The tool returned: ") || out[1].ID == out[0].ID {
		t.Fatalf("turn 2: %s", out[1].RawJSON())
	}
	if !refs && out[1].PreviousResponseID != out[0].ID {
		t.Errorf("turn 2 previous_response_id %q", out[1].PreviousResponseID)
	}
	thanks := responses.ResponseInputItemParamOfMessage("Thanks, and tomorrow?", responses.EasyInputMessageRoleUser)
	if refs {
		var msgID string
		for _, it := range out[1].Output {
			if it.Type == "message" {
				msgID = it.ID
			}
		}
		p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			user, responses.ResponseInputItemParamOfItemReference(calls[0].ID), output,
			responses.ResponseInputItemParamOfItemReference(msgID), thanks}}
	} else {
		p.PreviousResponseID = openai.String(out[1].ID)
		p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{thanks}}
	}
	out[2] = turn(t, f, stream, p)
	return out
}

// sawHistory checks that the upstream request of the last turn carried the
// whole conversation, in the binding's shape.
func sawHistory(t *testing.T, f *fixture, model, city string) {
	t.Helper()
	up := f.waitFor(func(r mockupstream.Request) bool {
		return strings.Contains(string(r.Body), "Thanks, and tomorrow?") && strings.Contains(string(r.Body), city) && strings.HasPrefix(r.Model, model)
	})
	body := string(up.Body)
	for _, want := range []string{"What is the weather in " + city + "?", "get_weather", "sunny-and-mild", "The tool returned: ", "Thanks, and tomorrow?"} {
		if !strings.Contains(body, want) {
			t.Errorf("the last turn's upstream body lacks %q: %s", want, body)
		}
	}
	if strings.Contains(body, "item_reference") || strings.Contains(body, "previous_response_id") {
		t.Errorf("state ids went upstream: %s", body)
	}
}

func TestResponsesState_ThreeTurnsOnEveryShape(t *testing.T) {
	t.Parallel()
	f := statefulFixture(t, nil)
	for _, shape := range responsesTargets {
		for _, stream := range []bool{false, true} {
			for _, refs := range []bool{false, true} {
				name := fmt.Sprintf("%s/stream=%v/item_reference=%v", shape, stream, refs)
				t.Run(name, func(t *testing.T) {
					city := fmt.Sprintf("%s-%v-%v", shape, stream, refs)
					out := conversation(t, f, string(shape), city, stream, refs)
					for _, r := range out {
						if len(r.ID) != len("resp_")+48 || !strings.Contains(r.RawJSON(), `"store":true`) {
							t.Errorf("not an id Relay minted, or not stored: %s", r.RawJSON())
						}
					}
					sawHistory(t, f, upstreamNames[shape], city)
				})
			}
		}
	}
}

func TestResponsesState_FailsOverBetweenShapesMidConversation(t *testing.T) {
	t.Parallel()
	f := statefulFixture(t, nil)
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			// Turn 1 on anthropic; turn 2's anthropic attempt fails and gemini
			// serves it, from the state Relay kept; turn 3 back on anthropic.
			city := fmt.Sprintf("Lyon-%v", stream)
			conversation(t, f, "failover", city, stream, false, oaopt.WithHeader(testFault, "500"))
			up := f.waitFor(func(r mockupstream.Request) bool {
				return strings.HasPrefix(r.Model, upstreamNames[wire.ShapeGemini]) && strings.Contains(string(r.Body), "sunny-and-mild") && strings.Contains(string(r.Body), city)
			})
			if !strings.Contains(string(up.Body), "get_weather") {
				t.Errorf("gemini's turn lacks the history: %s", up.Body)
			}
			sawHistory(t, f, upstreamNames[wire.ShapeAnthropic], city)
		})
		// Begun on openai_responses, whose answer Relay keeps a copy of:
		// anthropic continues it, and openai_responses then gets the
		// expanded input (it has never seen the id anthropic's turn got).
		t.Run(fmt.Sprintf("from openai_responses/stream=%v", stream), func(t *testing.T) {
			city := fmt.Sprintf("Nice-%v", stream)
			conversation(t, f, "failover-native", city, stream, false, oaopt.WithHeader(testFault, "500"))
			up := f.waitFor(func(r mockupstream.Request) bool {
				return strings.HasPrefix(r.Model, upstreamNames[wire.ShapeAnthropic]) && strings.Contains(string(r.Body), "sunny-and-mild") && strings.Contains(string(r.Body), city)
			})
			if !strings.Contains(string(up.Body), "get_weather") {
				t.Errorf("anthropic's turn lacks the history: %s", up.Body)
			}
			sawHistory(t, f, upstreamNames[wire.ShapeOpenAIResponses], city)
		})
	}
}

func TestResponsesState_RetrieveDeleteListAndOtherProjects(t *testing.T) {
	t.Parallel()
	f := statefulFixture(t, nil)
	out := conversation(t, f, string(wire.ShapeAnthropic), "Oslo", false, false)
	client := f.openai()
	other := f.openai(oaopt.WithAPIKey(otherKey))
	ctx := t.Context()

	got, err := client.Responses.Get(ctx, out[1].ID, responses.ResponseGetParams{})
	if err != nil || got.ID != out[1].ID || got.OutputText() != out[1].OutputText() || !strings.Contains(got.RawJSON(), `"store":true`) {
		t.Fatalf("get: %v %s", err, got.RawJSON())
	}
	// input_items: newest first, the history included, paged.
	page, err := client.Responses.InputItems.List(ctx, out[2].ID, responses.InputItemListParams{Limit: openai.Int(2)})
	if err != nil || len(page.Data) != 2 || !page.HasMore {
		t.Fatalf("input items: %v %+v", err, page)
	}
	if page.Data[0].Type != "message" || !strings.Contains(page.Data[0].RawJSON(), "Thanks, and tomorrow?") {
		t.Errorf("newest item %s", page.Data[0].RawJSON())
	}
	var all []string
	pager := client.Responses.InputItems.ListAutoPaging(ctx, out[2].ID, responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc, Limit: openai.Int(2)})
	for pager.Next() {
		all = append(all, pager.Current().Type)
	}
	if err := pager.Err(); err != nil {
		t.Fatal(err)
	}
	// user, (any text before) the call, its output, the answer, the follow-up.
	if j := strings.Join(all, ","); !strings.HasPrefix(j, "message,") || !strings.HasSuffix(j, ",function_call,function_call_output,message,message") {
		t.Errorf("input items in order: %v", all)
	}

	// Another project: every route and previous_response_id are 404.
	var oe *openai.Error
	if _, err := other.Responses.Get(ctx, out[1].ID, responses.ResponseGetParams{}); !errors.As(err, &oe) || oe.StatusCode != 404 {
		t.Errorf("other project's get: %v", err)
	}
	if _, err := other.Responses.InputItems.List(ctx, out[1].ID, responses.InputItemListParams{}); !errors.As(err, &oe) || oe.StatusCode != 404 {
		t.Errorf("other project's input items: %v", err)
	}
	if err := other.Responses.Delete(ctx, out[1].ID); !errors.As(err, &oe) || oe.StatusCode != 404 {
		t.Errorf("other project's delete: %v", err)
	}
	p := responsesParams(string(wire.ShapeAnthropic))
	p.PreviousResponseID = openai.String(out[1].ID)
	_, err = other.Responses.New(ctx, p)
	if !errors.As(err, &oe) || oe.StatusCode != 404 || oe.Param != "previous_response_id" || !strings.Contains(oe.Message, out[1].ID) {
		t.Errorf("other project's previous_response_id: %v", err)
	}
	f.rec.next(t)
	p = responsesParams(string(wire.ShapeAnthropic))
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{responses.ResponseInputItemParamOfItemReference(functionCalls(out[0])[0].ID)}}
	if _, err = other.Responses.New(ctx, p); !errors.As(err, &oe) || oe.StatusCode != 404 || oe.Param != "input[0].id" {
		t.Errorf("other project's item_reference: %v", err)
	}
	f.rec.next(t)

	// cancel: nothing Relay stores is in the background.
	if _, err := client.Responses.Cancel(ctx, out[1].ID); !errors.As(err, &oe) || oe.StatusCode != 400 {
		t.Errorf("cancel: %v", err)
	}
	// DELETE, then it is gone for GET and for previous_response_id.
	if err := client.Responses.Delete(ctx, out[1].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Responses.Get(ctx, out[1].ID, responses.ResponseGetParams{}); !errors.As(err, &oe) || oe.StatusCode != 404 {
		t.Errorf("get after delete: %v", err)
	}
	if err := client.Responses.Delete(ctx, out[1].ID); !errors.As(err, &oe) || oe.StatusCode != 404 {
		t.Errorf("second delete: %v", err)
	}
	// store: false keeps nothing.
	p = responsesParams(string(wire.ShapeAnthropic))
	p.Store = openai.Bool(false)
	resp := turn(t, f, false, p)
	if !strings.Contains(resp.RawJSON(), `"store":false`) {
		t.Errorf("store false answered %s", resp.RawJSON())
	}
	if _, err := client.Responses.Get(ctx, resp.ID, responses.ResponseGetParams{}); !errors.As(err, &oe) || oe.StatusCode != 404 {
		t.Errorf("get of an unstored response: %v", err)
	}
	// Wrong methods and paths answer in OpenAI's shape.
	r, body := f.do(http.MethodPut, "/v1/responses/"+out[2].ID, "", nil)
	if r.StatusCode != 405 || decodeError(t, body).Error.Message == "" {
		t.Errorf("PUT: %d %s", r.StatusCode, body)
	}
}

func TestResponsesState_Bounds(t *testing.T) {
	t.Parallel()
	c := &clock{t: epoch}
	store := respstore.NewMemory(respstore.Limits{TTL: time.Hour, MaxBytes: 6000, ProjectMaxBytes: 1 << 20}, c.Now)
	f := statefulFixture(t, store)
	client := f.openai()
	ctx := t.Context()
	var oe *openai.Error

	// Retention: an hour later the response is gone.
	first := turn(t, f, false, responsesParams(string(wire.ShapeGemini)))
	c.Advance(2 * time.Hour)
	if _, err := client.Responses.Get(ctx, first.ID, responses.ResponseGetParams{}); !errors.As(err, &oe) || oe.StatusCode != 404 {
		t.Errorf("get after the TTL: %v", err)
	}

	// Size: an answer whose state is over the bound is not kept, and
	// saying so is the answer to what continues it.
	p := responsesParams(string(wire.ShapeGemini))
	p.Input = responses.ResponseNewParamsInputUnion{OfString: openai.String(strings.Repeat("long words ", 500))}
	big := turn(t, f, false, p)
	p = responsesParams(string(wire.ShapeGemini))
	p.PreviousResponseID = openai.String(big.ID)
	_, err := client.Responses.New(ctx, p)
	if !errors.As(err, &oe) || oe.StatusCode != 400 || oe.Param != "previous_response_id" || !strings.Contains(oe.Message, "RELAY_RESPONSES_MAX_BYTES") {
		t.Errorf("continuing a response over the bound: %v", err)
	}
	f.rec.next(t)
	if _, err := client.Responses.Get(ctx, big.ID, responses.ResponseGetParams{}); !errors.As(err, &oe) || oe.StatusCode != 404 || !strings.Contains(oe.Message, "was not kept") {
		t.Errorf("get of a response over the bound: %v", err)
	}
	// A request whose state is already over the bound is refused before
	// it costs anything, unless it asks for no storing.
	p = responsesParams(string(wire.ShapeGemini))
	p.Input = responses.ResponseNewParamsInputUnion{OfString: openai.String(strings.Repeat("long words ", 700))}
	small := turn(t, f, false, responsesParams(string(wire.ShapeGemini)))
	p.PreviousResponseID = openai.String(small.ID)
	n := len(f.requests())
	_, err = client.Responses.New(ctx, p)
	if !errors.As(err, &oe) || oe.StatusCode != 400 || oe.Param != "store" {
		t.Errorf("state over the bound: %v", err)
	}
	f.rec.next(t)
	if len(f.requests()) != n {
		t.Error("a request refused for its state size reached the upstream")
	}
	p.Store = openai.Bool(false)
	if resp := turn(t, f, false, p); !strings.Contains(resp.RawJSON(), `"store":false`) {
		t.Errorf("store false over the bound: %s", resp.RawJSON())
	}
}

// A response an openai_responses upstream stored is deleted there too,
// with the host key that made it; another project's DELETE reaches no
// upstream.
func TestResponsesState_DeleteReachesTheHostKeyThatMadeIt(t *testing.T) {
	t.Parallel()
	f := statefulFixture(t, nil)
	resp := turn(t, f, false, responsesParams("failover-native"))
	if err := f.openai(oaopt.WithAPIKey(otherKey)).Responses.Delete(t.Context(), resp.ID); err == nil {
		t.Fatal("another project deleted the response")
	}
	if err := f.openai().Responses.Delete(t.Context(), resp.ID); err != nil {
		t.Fatal(err)
	}
	var deletes []mockupstream.Request
	for _, r := range f.requests() {
		if r.Method == http.MethodDelete {
			deletes = append(deletes, r)
		}
	}
	if len(deletes) != 1 || deletes[0].Path != "/v1/responses/"+resp.ID || deletes[0].Header.Get("Authorization") != "Bearer sk-up-fo-oa-secret-1" {
		t.Fatalf("upstream deletes %+v", deletes)
	}
	var oe *openai.Error
	if _, err := f.openai().Responses.Get(t.Context(), resp.ID, responses.ResponseGetParams{}); !errors.As(err, &oe) || oe.StatusCode != 404 {
		t.Errorf("get after delete: %v", err)
	}
}

// Two pods sharing one Redis: a conversation begun on one continues on
// the other, and the other project still sees nothing.
func TestResponsesState_SharedByPodsThroughRedis(t *testing.T) {
	t.Parallel()
	f, pod2 := twoPods(t)

	first := turn(t, f, false, responsesParams(string(wire.ShapeAnthropic)))
	c2 := openai.NewClient(oaopt.WithBaseURL(pod2+"/v1"), oaopt.WithAPIKey(relayKey), oaopt.WithMaxRetries(0))
	p := responsesParams(string(wire.ShapeGemini))
	p.PreviousResponseID = openai.String(first.ID)
	p.Input = responses.ResponseNewParamsInputUnion{OfString: openai.String("second turn on pod 2")}
	resp, err := c2.Responses.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	f.rec.next(t)
	up := f.waitFor(func(r mockupstream.Request) bool { return strings.Contains(string(r.Body), "second turn on pod 2") })
	if !strings.Contains(string(up.Body), "Hello there, relay friend") || !strings.Contains(string(up.Body), first.OutputText()) {
		t.Errorf("pod 2 did not continue pod 1's response: %s", up.Body)
	}
	if got, err := f.openai().Responses.Get(t.Context(), resp.ID, responses.ResponseGetParams{}); err != nil || got.ID != resp.ID {
		t.Errorf("pod 1 cannot read pod 2's response: %v", err)
	}
	var oe *openai.Error
	other := openai.NewClient(oaopt.WithBaseURL(pod2+"/v1"), oaopt.WithAPIKey(otherKey), oaopt.WithMaxRetries(0))
	if _, err := other.Responses.Get(t.Context(), resp.ID, responses.ResponseGetParams{}); !errors.As(err, &oe) || oe.StatusCode != 404 {
		t.Errorf("another project on pod 2: %v", err)
	}
}

// The Vercel AI SDK's default provider (store unset, so on) sends the
// assistant's earlier items back as typed item references: the body it
// sends, turn by turn, works on a translated binding.
func TestResponsesState_AISDKItemReferences(t *testing.T) {
	t.Parallel()
	f := statefulFixture(t, nil)
	for _, stream := range []bool{false, true} {
		s := fmt.Sprint(stream)
		_, body := f.post("/v1/responses", `{"model":"gemini","input":[{"role":"user","content":[{"type":"input_text","text":"weather in Rome-`+s+`?"}]}],`+
			`"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":false}],"tool_choice":{"type":"function","name":"get_weather"}}`, nil)
		f.rec.next(t)
		var r1 struct {
			ID     string `json:"id"`
			Output []struct {
				ID     string `json:"id"`
				Type   string `json:"type"`
				CallID string `json:"call_id"`
			} `json:"output"`
		}
		if err := json.Unmarshal([]byte(body), &r1); err != nil {
			t.Fatalf("turn 1 %s", body)
		}
		var fc, callID string
		for _, o := range r1.Output {
			if o.Type == "function_call" {
				fc, callID = o.ID, o.CallID
			}
		}
		if fc == "" {
			t.Fatalf("no call in %s", body)
		}
		resp, body := f.post("/v1/responses", `{"model":"gemini","stream":`+s+`,"input":[{"role":"user","content":[{"type":"input_text","text":"weather in Rome-`+s+`?"}]},`+
			`{"type":"item_reference","id":"`+fc+`"},{"type":"function_call_output","call_id":"`+callID+`","output":"sunny-and-mild"}],`+
			`"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":false}]}`, nil)
		f.rec.next(t)
		if resp.StatusCode != 200 || !strings.Contains(body, "The tool returned: ") {
			t.Fatalf("turn 2: %d %s", resp.StatusCode, body)
		}
	}
}
