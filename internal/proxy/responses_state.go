package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/objects"
	"github.com/relay-llm/relay/internal/respstore"
	"github.com/relay-llm/relay/internal/translator"
	"github.com/relay-llm/relay/internal/wire"
)

// Stateful Responses on every binding. A /v1/responses request that
// continues stored state (previous_response_id, item_reference items) has
// that state loaded from the response store in one round trip once it is
// routed, and its input expanded: the earlier items first, references
// replaced by their items. A binding of another shape is then translated
// from the expanded body; an openai_responses binding gets it too when the
// state was Relay's own (the upstream has never seen those ids), the
// caller's bytes when the upstream keeps the state itself. With store on
// (the default), Relay mints the response id (translated bindings) and
// keeps the answer before its last bytes reach the caller, so the next
// turn always finds it. docs/inference-api.md says what the caller sees.

// storeTimeout bounds each call to the response store.
const storeTimeout = 2 * time.Second

// respState is one request's Responses state.
type respState struct {
	store bool   // keep the answer
	id    string // the id Relay minted for it
	prev  string // previous_response_id as sent
	// input is what the model sees: the history continued, then the
	// request's items, references replaced; every item has an id.
	input []json.RawMessage
	// expanded is the caller's body with input expanded and
	// previous_response_id left out; nil when nothing was expanded.
	expanded []byte
	// relayMade: some of the state came from Relay's own records, so an
	// openai_responses upstream must get the expanded body too.
	relayMade bool
	// conv is the conversation the request continues ("" none), added
	// the request's own items (ids given) that go into it with the
	// answer's output (conversations.go).
	conv  string
	added []json.RawMessage
}

// stateRequest is what prepareState reads of a Responses body.
type stateRequest struct {
	Store        *bool           `json:"store"`
	Prev         *string         `json:"previous_response_id"`
	Conversation json.RawMessage `json:"conversation"`
	Input        json.RawMessage `json:"input"`
}

// prepareState loads and expands the Responses state of a routed
// request; false when it answered the caller.
func (rq *request) prepareState() bool {
	src := rq.decodable()
	var q stateRequest
	if json.Unmarshal(src, &q) != nil {
		return true // the translator names what is wrong
	}
	conv, werr := conversationParam(q.Conversation)
	if werr != nil {
		rq.fail(werr)
		return false
	}
	st := &respState{store: q.Store == nil || *q.Store, conv: conv}
	if q.Prev != nil {
		st.prev = *q.Prev
	}
	if conv != "" && st.prev != "" {
		rq.fail(&wire.Error{Kind: wire.ErrMalformedRequest, Param: "previous_response_id", Msg: "previous_response_id and conversation cannot be used together: a conversation holds the history itself."})
		return false
	}
	items, refs, ok := inputItems(q.Input)
	if !ok {
		return true // the translator names what is wrong
	}
	if st.prev == "" && len(refs) == 0 && conv == "" {
		if st.store {
			st.id = newResponseID()
			st.input = withItemIDs(items)
			rq.st = st
		}
		return true
	}
	ctx, cancel := context.WithTimeout(rq.r.Context(), storeTimeout)
	defer cancel()
	var history []json.RawMessage
	held := map[string]json.RawMessage{} // the conversation's items, by id
	if conv != "" {
		// The conversation is the history; references may point into it.
		cs, err := rq.h.responses.GetConversation(ctx, rq.project(), conv, true)
		switch {
		case errors.Is(err, respstore.ErrNotFound):
			rq.fail(notFoundConversation(conv, "conversation"))
			return false
		case err != nil:
			rq.storeFailed(err)
			return false
		}
		history = cs.Items
		for _, it := range history {
			held[respstore.ItemID(it)] = it
		}
		st.relayMade = true
	}
	ids := make([]string, 0, len(refs))
	for _, r := range refs {
		if _, in := held[r.id]; !in {
			ids = append(ids, r.id)
		}
	}
	var loaded respstore.Loaded
	if st.prev != "" || len(ids) > 0 {
		var err error
		loaded, err = rq.h.responses.Load(ctx, rq.project(), st.prev, ids)
		if err != nil {
			rq.h.log.Warn("load stored responses", "request_id", rq.id, "error", err)
			rq.fail(wire.Errorf(wire.ErrUnavailable, "Relay's response store is unavailable; retry shortly, or send the whole conversation as input with store: false."))
			return false
		}
	}
	native := rq.planHasNative() && conv == "" // a conversation is Relay's on every shape
	if st.prev != "" {
		prev := loaded.Response
		switch {
		case prev == nil && native:
			return true // an upstream's own id: it passes through as today
		case prev == nil:
			rq.fail(&wire.Error{Kind: wire.ErrNotFound, Param: "previous_response_id", Msg: "Previous response with id '" + st.prev + "' not found."})
			return false
		case prev.Dropped > 0:
			rq.fail(&wire.Error{Kind: wire.ErrMalformedRequest, Param: "previous_response_id", Msg: droppedMessage(prev, rq.h.responses.Limits())})
			return false
		}
		history = append(append(history, prev.Input...), prev.Output...)
		st.relayMade = prev.Upstream == ""
	}
	for _, r := range refs {
		it, found := held[r.id]
		if !found {
			it, found = loaded.Items[r.id]
		}
		if !found {
			if native {
				return true
			}
			rq.fail(&wire.Error{Kind: wire.ErrNotFound, Param: "input[" + strconv.Itoa(r.at) + "].id", Msg: "Item with id '" + r.id + "' not found."})
			return false
		}
		items[r.at] = it
		st.relayMade = true
	}
	own := withItemIDs(items)
	if conv != "" {
		st.added = own
	}
	st.input = append(history[:len(history):len(history)], own...)
	var err error
	if st.expanded, err = expandedBody(src, st.input); err != nil {
		return true // the translator names what is wrong
	}
	if st.store {
		st.id = newResponseID()
	}
	if max := rq.h.responses.Limits().MaxBytes; (st.store || conv != "") && int64(len(st.expanded)) > max {
		param := "store"
		if conv != "" {
			param = "conversation"
		}
		rq.fail(&wire.Error{Kind: wire.ErrMalformedRequest, Param: param, Msg: "This conversation's state is " + strconv.Itoa(len(st.expanded)) +
			" bytes, over Relay's bound of " + strconv.FormatInt(max, 10) + " bytes per stored response (RELAY_RESPONSES_MAX_BYTES): send store: false, or start a new conversation."})
		return false
	}
	rq.st = st
	if st.relayMade {
		// Every binding, openai_responses too, gets the expanded body.
		rq.body.Reset()
		rq.body.Write(st.expanded)
		rq.hintCut = wire.Cut{}
		scan, err := wire.ScanRequest(rq.body.Bytes())
		if err != nil {
			rq.fail(&wire.Error{Kind: wire.ErrMalformedRequest, Msg: "Could not parse the request body: " + err.Error()})
			return false
		}
		rq.scan = scan
	}
	return true
}

// planHasNative reports whether the plan holds an openai_responses
// binding: the upstream may know ids Relay does not.
func (rq *request) planHasNative() bool {
	for i := range rq.plan.Bindings {
		if translator.Native(rq.in, rq.plan.Bindings[i].Binding.Shape) {
			return true
		}
	}
	return false
}

// project is the caller's project, the scope of every stored response.
func (rq *request) project() string { return rq.caller.ProjectID.String() }

// droppedMessage says why a response cannot be continued or read.
func droppedMessage(rec *respstore.Record, l respstore.Limits) string {
	return "The response '" + rec.ID + "' was not kept: its state was " + strconv.FormatInt(rec.Dropped, 10) +
		" bytes, over Relay's bound of " + strconv.FormatInt(l.MaxBytes, 10) + " bytes per stored response (RELAY_RESPONSES_MAX_BYTES). Send the conversation as input with store: false."
}

// itemRef is an item_reference input item.
type itemRef struct {
	id string
	at int // its index in input
}

// inputItems reads input as items (a string is one user message) and
// finds its item references; ok false when input is neither.
func inputItems(raw json.RawMessage) (items []json.RawMessage, refs []itemRef, ok bool) {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return nil, nil, true
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, nil, false
		}
		msg, _ := json.Marshal(map[string]any{"type": "message", "role": "user", "content": []any{map[string]string{"type": "input_text", "text": s}}})
		return []json.RawMessage{msg}, nil, true
	}
	if json.Unmarshal(raw, &items) != nil {
		return nil, nil, false
	}
	for i, it := range items {
		var v struct {
			Type string          `json:"type"`
			ID   string          `json:"id"`
			Role json.RawMessage `json:"role"`
		}
		if json.Unmarshal(it, &v) != nil {
			return nil, nil, false
		}
		// A reference is typed item_reference, or (openai-go's) an id alone.
		if v.Type == "item_reference" || v.Type == "" && v.Role == nil && v.ID != "" {
			if v.ID == "" {
				return nil, nil, false
			}
			refs = append(refs, itemRef{id: v.ID, at: i})
		}
	}
	return items, refs, true
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// withItemIDs gives every item without an id one, as OpenAI does for the
// input items it keeps, so they can be referenced later.
func withItemIDs(items []json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, len(items))
	for i, it := range items {
		it = bytes.TrimSpace(it)
		if len(it) < 2 || it[0] != '{' || respstore.ItemID(it) != "" {
			out[i] = it
			continue
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(it, &m) != nil {
			out[i] = it // the translator names what is wrong
			continue
		}
		var typ string
		_ = json.Unmarshal(m["type"], &typ)
		prefix := "msg_"
		switch typ {
		case "function_call":
			prefix = "fc_"
		case "function_call_output":
			prefix = "fco_"
		case "reasoning":
			prefix = "rs_"
		}
		m["id"] = json.RawMessage(wire.AppendString(nil, prefix+randomHex(24)))
		if typ == "" && m["role"] != nil {
			m["type"] = json.RawMessage(`"message"`) // as OpenAI lists an easy input message
		}
		b, err := json.Marshal(m)
		if err != nil {
			out[i] = it
			continue
		}
		out[i] = b
	}
	return out
}

// expandedBody is body with input replaced and previous_response_id left
// out.
func expandedBody(body []byte, input []json.RawMessage) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	delete(m, "previous_response_id")
	delete(m, "conversation")
	in, err := json.Marshal(input)
	if err != nil {
		return nil, err
	}
	m["input"] = in
	return json.Marshal(m)
}

// newResponseID mints a response id like OpenAI's: "resp_" and 192
// random bits in hex. Item ids are built on it.
func newResponseID() string { return "resp_" + randomHex(24) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// keepAnswer stores the response object a Responses caller is about to
// receive (whole, or the terminal event of its stream, in out), before
// those bytes leave, so the next turn finds it.
func (rq *request) keepAnswer(out []byte, upstream string) (id string) {
	st := rq.st
	if st == nil || !st.store && st.conv == "" {
		return ""
	}
	obj := terminalResponse(out)
	if obj == nil {
		return ""
	}
	var r struct {
		ID        string            `json:"id"`
		Status    string            `json:"status"`
		CreatedAt int64             `json:"created_at"`
		Model     string            `json:"model"`
		Output    []json.RawMessage `json:"output"`
	}
	if json.Unmarshal(obj, &r) != nil || r.ID == "" || (r.Status != "completed" && r.Status != "incomplete") {
		return ""
	}
	if st.conv != "" {
		rq.appendConversation(r.Output)
	}
	if !st.store {
		return ""
	}
	rec := &respstore.Record{ID: r.ID, CreatedAt: r.CreatedAt, Model: r.Model, Response: obj, Input: st.input, Output: r.Output, Upstream: upstream}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rq.r.Context()), storeTimeout)
	defer cancel()
	switch err := rq.h.responses.Put(ctx, rq.project(), rec); {
	case errors.Is(err, respstore.ErrTooLarge):
		// The bound at work: a marker says so to whoever continues it.
		rq.h.log.Info("response not kept: over RELAY_RESPONSES_MAX_BYTES", "request_id", rq.id, "response_id", r.ID)
	case err != nil:
		rq.h.log.Warn("store response", "request_id", rq.id, "response_id", r.ID, "error", err)
	}
	return r.ID
}

// terminalResponse finds the response object in out: a whole response
// object, or the response of a terminal stream event.
func terminalResponse(out []byte) json.RawMessage {
	t := bytes.TrimSpace(out)
	if len(t) > 0 && t[0] == '{' {
		return json.RawMessage(t)
	}
	er := wire.NewEventReader(bytes.NewReader(out), nil, maxEventBytes)
	for {
		ev, err := er.Next()
		if err != nil {
			return nil
		}
		switch string(ev.Name) {
		case "response.completed", "response.incomplete":
			var v struct {
				Response json.RawMessage `json:"response"`
			}
			if json.Unmarshal(ev.Data, &v) == nil && !isNull(v.Response) {
				return v.Response
			}
		}
	}
}

// stateDecoded tells the decoded request what Relay does with its state:
// the id it keeps the answer under, the previous response it continued.
func (rq *request) stateDecoded() {
	st := rq.st
	if st == nil || rq.xin == nil {
		return
	}
	c := rq.xin.C.State
	if c == nil {
		c = new(canonical.State)
		rq.xin.C.State = c
	}
	c.ID, c.PreviousResponseID, c.Expanded = st.id, st.prev, true
}

// keepPassthrough keeps a copy of what an openai_responses upstream
// answered with store on (out: the body, or the terminal event), so that
// a later turn served by another shape can continue it. The upstream keeps
// its own state; Relay's copy names the host.
func (rq *request) keepPassthrough(out []byte) {
	if rq.st == nil || rq.attempt.xl != nil || rq.in != wire.InboundResponses || rq.attempt.cand == nil || rq.attempt.cand.Host == nil {
		return
	}
	id := rq.keepAnswer(out, rq.attempt.cand.Host.Slug)
	if id == "" || rq.attempt.key == nil {
		return
	}
	// The upstream holds it under this host key: DELETE must reach it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rq.r.Context()), storeTimeout)
	defer cancel()
	o := objects.Object{ID: id, Kind: objects.KindResponse, ProjectID: rq.caller.ProjectID, HostID: rq.attempt.cand.Host.ID, HostKeyID: rq.attempt.key.ID, CreatedAt: rq.at}
	if err := rq.h.objects.Put(ctx, o); err != nil {
		rq.h.log.Warn("index stored response", "request_id", rq.id, "response_id", id, "error", err)
	}
}

// keptBody is the copy of a passthrough body pipeBody makes for
// keepPassthrough: nil (a no-op) when nothing is to be kept, and dropped
// once it grows past what the store would keep.
type keptBody struct {
	b   []byte
	max int
}

func (rq *request) keptBody() *keptBody {
	if rq.st == nil || !rq.st.store && rq.st.conv == "" || rq.in != wire.InboundResponses {
		return nil
	}
	return &keptBody{max: int(rq.h.responses.Limits().MaxBytes)}
}

func (k *keptBody) add(p []byte) {
	if k == nil || k.max < 0 {
		return
	}
	if len(k.b)+len(p) > k.max {
		k.b, k.max = nil, -1 // too large to keep
		return
	}
	k.b = append(k.b, p...)
}

func (k *keptBody) keep(rq *request) {
	if k != nil && k.max >= 0 {
		rq.keepPassthrough(k.b)
	}
}
