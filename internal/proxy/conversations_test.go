package proxy_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	oaopt "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/ratelimit"
	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/respstore"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// The Conversations API, judged by openai-go: conversations made, read,
// edited and deleted through client.Conversations, and named by
// Responses.New's conversation on every binding shape, plain and
// streamed; other projects' ids; both stores.

// twoPods is statefulFixture on a Redis of its own and a second proxy
// (pod 2) with the same catalog on the same Redis; it returns pod 2's URL.
func twoPods(t *testing.T) (*fixture, string) {
	t.Helper()
	rc, err := ratelimit.NewRedisClient(redistest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	prefix := redistest.Prefix(t)
	f := statefulFixture(t, respstore.NewRedis(rc, prefix, respstore.Limits{}, nil))
	snap := snapshot.Build(&f.data, 1, f.clock.Now())
	cfg := f.cfg
	cfg.Snapshot = func() *snapshot.Snapshot { return snap }
	cfg.Responses = respstore.NewRedis(rc, prefix, respstore.Limits{}, nil)
	pod2 := httptest.NewServer(proxy.New(cfg))
	t.Cleanup(pod2.Close)
	return f, pod2.URL
}

// newConversation makes a conversation with one item through openai-go.
func newConversation(t *testing.T, client *openai.Client, city string) *conversations.Conversation {
	t.Helper()
	c, err := client.Conversations.New(t.Context(), conversations.ConversationNewParams{
		Metadata: shared.Metadata{"city": city},
		Items: []responses.ResponseInputItemUnionParam{
			responses.ResponseInputItemParamOfMessage("I am planning a trip to "+city+".", responses.EasyInputMessageRoleUser),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ID) != len("conv_")+48 || !strings.HasPrefix(c.ID, "conv_") || c.Object != "conversation" || c.CreatedAt == 0 {
		t.Fatalf("created %s", c.RawJSON())
	}
	return c
}

// convTurns runs three turns in conversation conv on model: a forced tool
// call, the tool's output, a follow-up; each sends only its new items.
func convTurns(t *testing.T, f *fixture, model, conv, city string, stream, asObject bool) [3]*responses.Response {
	t.Helper()
	var out [3]*responses.Response
	ref := responses.ResponseNewParamsConversationUnion{OfString: openai.String(conv)}
	if asObject {
		ref = responses.ResponseNewParamsConversationUnion{OfConversationObject: &responses.ResponseConversationParam{ID: conv}}
	}
	p := responses.ResponseNewParams{Model: model, Tools: weatherTool(), Conversation: ref,
		Input:      responses.ResponseNewParamsInputUnion{OfString: openai.String("What is the weather in " + city + "?")},
		ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "get_weather"}},
	}
	out[0] = turn(t, f, stream, p)
	calls := functionCalls(out[0])
	if len(calls) != 1 {
		t.Fatalf("turn 1: %s", out[0].RawJSON())
	}
	output := responses.ResponseInputItemParamOfFunctionCallOutput(`{"sky":"sunny-and-mild"}`)
	output.OfFunctionCallOutput.CallID = openai.String(calls[0].CallID)
	p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{}
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{output}}
	out[1] = turn(t, f, stream, p)
	if !strings.HasPrefix(out[1].OutputText(), "The tool returned: ") {
		t.Fatalf("turn 2: %s", out[1].RawJSON())
	}
	p.Input = responses.ResponseNewParamsInputUnion{OfString: openai.String("Thanks, and tomorrow?")}
	out[2] = turn(t, f, stream, p)
	return out
}

// convItemTypes lists the conversation's item types, oldest first, through
// openai-go's auto-pager (pages of 2).
func convItemTypes(t *testing.T, client *openai.Client, conv string) []string {
	t.Helper()
	var types []string
	pager := client.Conversations.Items.ListAutoPaging(t.Context(), conv, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc, Limit: openai.Int(2)})
	for pager.Next() {
		it := pager.Current()
		if it.ID == "" {
			t.Errorf("an item without an id: %s", it.RawJSON())
		}
		types = append(types, it.Type)
	}
	if err := pager.Err(); err != nil {
		t.Fatal(err)
	}
	return types
}

func TestConversations_ThreeTurnsOnEveryShape(t *testing.T) {
	t.Parallel()
	f := statefulFixture(t, nil)
	client := f.openai()
	shapes := append(responsesTargets[:len(responsesTargets):len(responsesTargets)], wire.ShapeOpenAIResponses)
	for _, shape := range shapes {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", shape, stream), func(t *testing.T) {
				city := fmt.Sprintf("conv-%s-%v", shape, stream)
				conv := newConversation(t, client, city)
				convTurns(t, f, string(shape), conv.ID, city, stream, stream)
				// The last turn's upstream body carried the whole
				// conversation, the item made with it first.
				sawHistory(t, f, upstreamNames[shape], city)
				up := f.waitFor(func(r mockupstream.Request) bool {
					return strings.Contains(string(r.Body), "Thanks, and tomorrow?") && strings.Contains(string(r.Body), city)
				})
				if !strings.Contains(string(up.Body), "I am planning a trip to "+city) || strings.Contains(string(up.Body), conv.ID) {
					t.Errorf("the upstream body lacks the conversation's first item, or names the conversation: %s", up.Body)
				}
				// The conversation holds every turn's input and output.
				types := strings.Join(convItemTypes(t, client, conv.ID), ",")
				// The first item, turn 1's question, (any text before) the
				// call, its output, the answer, turn 3's question, its answer.
				if !strings.HasPrefix(types, "message,message,") || !strings.Contains(types, ",function_call,function_call_output,message,message,") {
					t.Errorf("conversation items: %s", types)
				}
			})
		}
	}
}

// A conversation moves between shapes as its model fails over, and a
// second pod on the same Redis continues it.
func TestConversations_SharedByPodsAndShapesThroughRedis(t *testing.T) {
	t.Parallel()
	f, pod2 := twoPods(t)
	c2 := openai.NewClient(oaopt.WithBaseURL(pod2+"/v1"), oaopt.WithAPIKey(relayKey), oaopt.WithMaxRetries(0))

	conv := newConversation(t, f.openai(), "Bergen")
	p := responsesParams(string(wire.ShapeAnthropic))
	p.Conversation = responses.ResponseNewParamsConversationUnion{OfString: openai.String(conv.ID)}
	p.Input = responses.ResponseNewParamsInputUnion{OfString: openai.String("first turn on pod 1")}
	first := turn(t, f, false, p)
	// Pod 2, another shape.
	p.Model = string(wire.ShapeGemini)
	p.Input = responses.ResponseNewParamsInputUnion{OfString: openai.String("second turn on pod 2")}
	if _, err := c2.Responses.New(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	f.rec.next(t)
	up := f.waitFor(func(r mockupstream.Request) bool { return strings.Contains(string(r.Body), "second turn on pod 2") })
	for _, want := range []string{"I am planning a trip to Bergen", "first turn on pod 1", strings.SplitN(first.OutputText(), "\n", 2)[0]} {
		if !strings.Contains(string(up.Body), want) {
			t.Errorf("pod 2's gemini turn lacks %q: %s", want, up.Body)
		}
	}
	// Failover mid-conversation: anthropic fails, gemini answers.
	p.Model = "failover"
	p.Input = responses.ResponseNewParamsInputUnion{OfString: openai.String("third turn, failed over")}
	turn(t, f, true, p, oaopt.WithHeader(testFault, "500"))
	up = f.waitFor(func(r mockupstream.Request) bool {
		return strings.HasPrefix(r.Model, upstreamNames[wire.ShapeGemini]) && strings.Contains(string(r.Body), "third turn, failed over")
	})
	if !strings.Contains(string(up.Body), "second turn on pod 2") {
		t.Errorf("the failed-over turn lacks the history: %s", up.Body)
	}
	page, err := c2.Conversations.Items.List(t.Context(), conv.ID, conversations.ItemListParams{})
	if err != nil || len(page.Data) != 7 || page.HasMore {
		t.Fatalf("pod 2's list: %v %+v", err, page)
	}
	if !strings.Contains(page.Data[1].RawJSON(), "third turn, failed over") {
		t.Errorf("newest first: %s", page.Data[1].RawJSON())
	}
	var oe *openai.Error
	other := openai.NewClient(oaopt.WithBaseURL(pod2+"/v1"), oaopt.WithAPIKey(otherKey), oaopt.WithMaxRetries(0))
	if _, err := other.Conversations.Get(t.Context(), conv.ID); !errors.As(err, &oe) || oe.StatusCode != 404 {
		t.Errorf("another project on pod 2: %v", err)
	}
}

func TestConversations_RoutesAndOtherProjects(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"memory", "redis"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			var s respstore.Store
			if store == "redis" {
				rc, err := ratelimit.NewRedisClient(redistest.URL(t))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { rc.Close() })
				s = respstore.NewRedis(rc, redistest.Prefix(t), respstore.Limits{}, nil)
			}
			conversationRoutes(t, statefulFixture(t, s))
		})
	}
}

func conversationRoutes(t *testing.T, f *fixture) {
	client := f.openai()
	other := f.openai(oaopt.WithAPIKey(otherKey))
	ctx := t.Context()
	var oe *openai.Error
	is := func(err error, status int, param string) bool {
		return errors.As(err, &oe) && oe.StatusCode == status && (param == "" || oe.Param == param)
	}

	conv := newConversation(t, client, "Turku")
	got, err := client.Conversations.Get(ctx, conv.ID)
	if err != nil || got.ID != conv.ID || !strings.Contains(got.RawJSON(), `"city":"Turku"`) {
		t.Fatalf("get: %v %s", err, got.RawJSON())
	}
	up, err := client.Conversations.Update(ctx, conv.ID, conversations.ConversationUpdateParams{Metadata: shared.Metadata{"stage": "2"}})
	if err != nil || !strings.Contains(up.RawJSON(), `"metadata":{"stage":"2"}`) || up.CreatedAt != conv.CreatedAt {
		t.Fatalf("update: %v %s", err, up.RawJSON())
	}
	added, err := client.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{Items: []responses.ResponseInputItemUnionParam{
		responses.ResponseInputItemParamOfMessage("one", responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemParamOfMessage("two", responses.EasyInputMessageRoleAssistant),
	}})
	if err != nil || len(added.Data) != 2 || added.FirstID == "" || added.LastID == "" || added.HasMore {
		t.Fatalf("add items: %v %+v", err, added)
	}
	if m := added.Data[1].AsMessage(); m.Role != "assistant" || len(m.Content) != 1 || m.Content[0].Type != "output_text" || m.Content[0].Text != "two" {
		t.Errorf("an assistant message as listed: %s", added.Data[1].RawJSON())
	}
	page, err := client.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{Limit: openai.Int(2)})
	if err != nil || len(page.Data) != 2 || !page.HasMore || page.Data[0].ID != added.LastID {
		t.Fatalf("list: %v %+v", err, page)
	}
	item, err := client.Conversations.Items.Get(ctx, conv.ID, added.FirstID, conversations.ItemGetParams{})
	if err != nil || item.ID != added.FirstID || item.AsMessage().Content[0].Text != "one" {
		t.Fatalf("get item: %v %s", err, item.RawJSON())
	}

	// Another project: every route, and a response naming it, is a 404.
	if _, err := other.Conversations.Get(ctx, conv.ID); !is(err, 404, "") {
		t.Errorf("other get: %v", err)
	}
	if _, err := other.Conversations.Update(ctx, conv.ID, conversations.ConversationUpdateParams{Metadata: shared.Metadata{}}); !is(err, 404, "") {
		t.Errorf("other update: %v", err)
	}
	if _, err := other.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{}); !is(err, 404, "") {
		t.Errorf("other list: %v", err)
	}
	if _, err := other.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{Items: []responses.ResponseInputItemUnionParam{
		responses.ResponseInputItemParamOfMessage("intruder", responses.EasyInputMessageRoleUser)}}); !is(err, 404, "") {
		t.Errorf("other add: %v", err)
	}
	if _, err := other.Conversations.Items.Get(ctx, conv.ID, added.FirstID, conversations.ItemGetParams{}); !is(err, 404, "") {
		t.Errorf("other get item: %v", err)
	}
	if _, err := other.Conversations.Items.Delete(ctx, conv.ID, added.FirstID); !is(err, 404, "") {
		t.Errorf("other delete item: %v", err)
	}
	if _, err := other.Conversations.Delete(ctx, conv.ID); !is(err, 404, "") {
		t.Errorf("other delete: %v", err)
	}
	p := responsesParams(string(wire.ShapeAnthropic))
	p.Conversation = responses.ResponseNewParamsConversationUnion{OfString: openai.String(conv.ID)}
	n := len(f.requests())
	if _, err := other.Responses.New(ctx, p); !is(err, 404, "conversation") || !strings.Contains(oe.Message, conv.ID) {
		t.Errorf("other project's conversation: %v", err)
	}
	f.rec.next(t)
	if len(f.requests()) != n {
		t.Error("a refused conversation reached the upstream")
	}
	if page, err := client.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{}); err != nil || len(page.Data) != 3 {
		t.Errorf("the other project changed the conversation: %v %+v", err, page)
	}

	// Bad input, in OpenAI's shape.
	p.PreviousResponseID = openai.String("resp_x")
	if _, err := client.Responses.New(ctx, p); !is(err, 400, "previous_response_id") {
		t.Errorf("conversation with previous_response_id: %v", err)
	}
	f.rec.next(t)
	for _, c := range []struct{ path, body, param string }{
		{"/v1/conversations", `{"items":[{"type":"item_reference","id":"msg_1"}]}`, "items[0].type"},
		{"/v1/conversations", `{"items":[` + strings.Repeat(`{"role":"user","content":"x"},`, 20) + `{"role":"user","content":"x"}]}`, "items"},
		{"/v1/conversations", `{"items":[{"content":"no role"}]}`, "items[0].type"},
		{"/v1/conversations", `{"metadata":{"k":1}}`, "metadata"},
		{"/v1/conversations", `{"metadata":{"k":"` + strings.Repeat("v", 513) + `"}}`, "metadata.k"},
		{"/v1/conversations", `{"title":"x"}`, "title"},
		{"/v1/conversations", `[1]`, ""},
		{"/v1/conversations/" + conv.ID, `{}`, "metadata"},
		{"/v1/conversations/" + conv.ID + "/items", `{}`, "items"},
		{"/v1/responses", `{"model":"anthropic","input":"hi","conversation":7}`, "conversation"},
		{"/v1/responses", `{"model":"anthropic","input":"hi","conversation":{"id":""}}`, "conversation"},
	} {
		resp, body := f.post(c.path, c.body, nil)
		param := decodeError(t, body).Error.Param
		if resp.StatusCode != 400 || c.param == "" && param != nil || c.param != "" && (param == nil || *param != c.param) {
			t.Errorf("%s %s: %d %s", c.path, c.body, resp.StatusCode, body)
		}
		if c.path == "/v1/responses" {
			f.rec.next(t)
		}
	}
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/v1/conversations"},
		{http.MethodPut, "/v1/conversations/" + conv.ID},
		{http.MethodDelete, "/v1/conversations/" + conv.ID + "/items"},
		{http.MethodPost, "/v1/conversations/" + conv.ID + "/items/" + added.FirstID},
	} {
		if resp, body := f.do(c.method, c.path, "", nil); resp.StatusCode != 405 || decodeError(t, body).Error.Message == "" {
			t.Errorf("%s %s: %d %s", c.method, c.path, resp.StatusCode, body)
		}
	}
	if resp, body := f.do(http.MethodGet, "/v1/conversations/"+conv.ID+"/nope", "", nil); resp.StatusCode != 404 || decodeError(t, body).Error.Message == "" {
		t.Errorf("an unknown sub-path: %d %s", resp.StatusCode, body)
	}
	if _, err := client.Conversations.Get(ctx, "conv_not-one-relay-made"); !is(err, 404, "") {
		t.Errorf("a malformed id: %v", err)
	}

	// Deleting an item, then the conversation.
	after, err := client.Conversations.Items.Delete(ctx, conv.ID, added.FirstID)
	if err != nil || after.ID != conv.ID {
		t.Fatalf("delete item: %v", err)
	}
	if _, err := client.Conversations.Items.Get(ctx, conv.ID, added.FirstID, conversations.ItemGetParams{}); !is(err, 404, "item_id") {
		t.Errorf("get of a deleted item: %v", err)
	}
	if _, err := client.Conversations.Items.Delete(ctx, conv.ID, added.FirstID); !is(err, 404, "item_id") {
		t.Errorf("second item delete: %v", err)
	}
	del, err := client.Conversations.Delete(ctx, conv.ID)
	if err != nil || !del.Deleted || del.ID != conv.ID || del.Object != "conversation.deleted" {
		t.Fatalf("delete: %v %+v", err, del)
	}
	if _, err := client.Conversations.Get(ctx, conv.ID); !is(err, 404, "") {
		t.Errorf("get after delete: %v", err)
	}
	if _, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: string(wire.ShapeGemini), Input: p.Input,
		Conversation: responses.ResponseNewParamsConversationUnion{OfString: openai.String(conv.ID)}}); !is(err, 404, "conversation") {
		t.Errorf("a response in a deleted conversation: %v", err)
	}
	f.rec.next(t)
}

// A conversation over RELAY_RESPONSES_MAX_BYTES is refused before an
// upstream is asked.
func TestConversations_Bounds(t *testing.T) {
	t.Parallel()
	f := statefulFixture(t, respstore.NewMemory(respstore.Limits{MaxBytes: 3000}, nil))
	client := f.openai()
	var oe *openai.Error
	_, err := client.Conversations.New(t.Context(), conversations.ConversationNewParams{Items: []responses.ResponseInputItemUnionParam{
		responses.ResponseInputItemParamOfMessage(strings.Repeat("long words ", 400), responses.EasyInputMessageRoleUser)}})
	if !errors.As(err, &oe) || oe.StatusCode != 400 || !strings.Contains(oe.Message, "RELAY_RESPONSES_MAX_BYTES") {
		t.Errorf("create over the bound: %v", err)
	}
	conv := newConversation(t, client, "Pori")
	p := responsesParams(string(wire.ShapeGemini))
	p.Conversation = responses.ResponseNewParamsConversationUnion{OfString: openai.String(conv.ID)}
	p.Input = responses.ResponseNewParamsInputUnion{OfString: openai.String(strings.Repeat("long words ", 400))}
	n := len(f.requests())
	if _, err := client.Responses.New(t.Context(), p); !errors.As(err, &oe) || oe.StatusCode != 400 || oe.Param != "conversation" {
		t.Errorf("a turn over the bound: %v", err)
	}
	f.rec.next(t)
	if len(f.requests()) != n {
		t.Error("a turn refused for its size reached the upstream")
	}
}
