package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/relay-llm/relay/internal/respstore"
	"github.com/relay-llm/relay/internal/wire"
)

// The Conversations API, served by Relay on every binding shape from the
// response store (package respstore), in the caller's project: another
// project's id is a 404 exactly like a missing one. The routes read no
// upstream. A /v1/responses request that names a conversation continues
// it (prepareState): its items are the history, and the request's input
// and the answer's output are appended to it when the answer is kept
// (keepAnswer). docs/inference-api.md says what the caller sees.

// Bounds of the spec: items per create or add, metadata pairs and sizes.
const (
	maxConvItems    = 20
	maxMetadataKeys = 16
	maxMetadataKey  = 64
	maxMetadataVal  = 512
)

// serveConversations answers /v1/conversations[/{id}[/items[/{item_id}]]];
// rest is what follows /v1/conversations.
func (h *Handler) serveConversations(rq *request, rest string) {
	defer rq.finish()
	rq.call.Dialect = wire.DialectOpenAI
	parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	if rest == "" {
		parts = nil
	}
	var want string
	switch {
	case len(parts) == 0:
		want = "POST"
	case len(parts) == 1 && parts[0] != "":
		want = "GET, POST or DELETE"
	case len(parts) == 2 && parts[0] != "" && parts[1] == "items":
		want = "GET or POST"
	case len(parts) == 3 && parts[0] != "" && parts[1] == "items" && parts[2] != "":
		want = "GET or DELETE"
	}
	method := rq.r.Method
	switch {
	case want == "":
		rq.fail(wire.Errorf(wire.ErrNotFound, "No such endpoint: %s %s.", method, rq.r.URL.Path))
		return
	case method != http.MethodGet && method != http.MethodPost && method != http.MethodDelete || !strings.Contains(want, method):
		rq.fail(wire.Errorf(wire.ErrMethodNotAllowed, "Use %s for %s.", want, rq.r.URL.Path))
		return
	}
	if !rq.authenticate() {
		return
	}
	rq.recorded = false // no model, no usage: nothing to bill
	var body []byte
	if method == http.MethodPost {
		if !rq.readBody() {
			return
		}
		body = rq.body.Bytes()
	}
	ctx, cancel := context.WithTimeout(rq.r.Context(), storeTimeout)
	defer cancel()
	if len(parts) == 0 {
		rq.createConversation(ctx, body)
		return
	}
	id := parts[0]
	if !validConversationID(id) {
		rq.fail(notFoundConversation(id, "conversation_id"))
		return
	}
	switch {
	case len(parts) == 1 && method == http.MethodGet:
		st, err := h.responses.GetConversation(ctx, rq.project(), id, false)
		if err != nil {
			rq.answerConversation(nil, err, id)
			return
		}
		rq.answerConversation(&st.Conversation, nil, id)
	case len(parts) == 1 && method == http.MethodPost:
		q, werr := decodeConversationBody(body, true)
		if werr != nil {
			rq.fail(werr)
			return
		}
		c, err := h.responses.UpdateConversation(ctx, rq.project(), id, q.metadata)
		rq.answerConversation(c, err, id)
	case len(parts) == 1:
		switch err := h.responses.DeleteConversation(ctx, rq.project(), id); {
		case err != nil:
			rq.answerConversation(nil, err, id)
		default:
			b := append(rq.out[:0], `{"id":`...)
			b = wire.AppendString(b, id)
			rq.out = append(b, `,"object":"conversation.deleted","deleted":true}`...)
			rq.respond(http.StatusOK, "application/json", rq.out)
		}
	case len(parts) == 2 && method == http.MethodPost:
		rq.addConversationItems(ctx, id, body)
	case len(parts) == 2:
		st, err := h.responses.GetConversation(ctx, rq.project(), id, true)
		if err != nil {
			rq.answerConversation(nil, err, id)
			return
		}
		rq.listItems(st.Items, "this conversation")
	case method == http.MethodGet:
		st, err := h.responses.GetConversation(ctx, rq.project(), id, true)
		if err != nil {
			rq.answerConversation(nil, err, id)
			return
		}
		for _, it := range st.Items {
			if respstore.ItemID(it) == parts[2] {
				rq.respond(http.StatusOK, "application/json", it)
				return
			}
		}
		rq.fail(notFoundItem(parts[2]))
	default:
		c, err := h.responses.DeleteItem(ctx, rq.project(), id, parts[2])
		if errors.Is(err, respstore.ErrItemNotFound) {
			rq.fail(notFoundItem(parts[2]))
			return
		}
		rq.answerConversation(c, err, id)
	}
}

func (rq *request) createConversation(ctx context.Context, body []byte) {
	q, werr := decodeConversationBody(body, false)
	if werr != nil {
		rq.fail(werr)
		return
	}
	c := &respstore.Conversation{ID: newConversationID(), CreatedAt: rq.at.Unix(), Metadata: q.metadata}
	err := rq.h.responses.CreateConversation(ctx, rq.project(), c, q.items)
	if errors.Is(err, respstore.ErrTooLarge) {
		rq.fail(tooLargeConversation("items"))
		return
	}
	rq.answerConversation(c, err, c.ID)
}

func (rq *request) addConversationItems(ctx context.Context, id string, body []byte) {
	q, werr := decodeConversationBody(body, false)
	switch {
	case werr != nil:
		rq.fail(werr)
		return
	case q.items == nil || q.metadata != nil:
		rq.fail(&wire.Error{Kind: wire.ErrMalformedRequest, Param: "items", Msg: "Send {\"items\": [...]}: 1 to 20 items to add."})
		return
	}
	switch err := rq.h.responses.AppendItems(ctx, rq.project(), id, q.items); {
	case errors.Is(err, respstore.ErrTooLarge):
		rq.fail(tooLargeConversation("items"))
	case err != nil:
		rq.answerConversation(nil, err, id)
	default:
		rq.writeItemList(q.items, false)
	}
}

// answerConversation answers c, or what err says.
func (rq *request) answerConversation(c *respstore.Conversation, err error, id string) {
	switch {
	case errors.Is(err, respstore.ErrNotFound):
		rq.fail(notFoundConversation(id, "conversation_id"))
	case err != nil:
		rq.storeFailed(err)
	default:
		b := append(rq.out[:0], `{"id":`...)
		b = wire.AppendString(b, c.ID)
		b = append(b, `,"object":"conversation","created_at":`...)
		b = strconv.AppendInt(b, c.CreatedAt, 10)
		meta, _ := json.Marshal(c.Metadata) // strings only
		if c.Metadata == nil {
			meta = []byte(`{}`)
		}
		b = append(append(b, `,"metadata":`...), meta...)
		rq.out = append(b, '}')
		rq.respond(http.StatusOK, "application/json", rq.out)
	}
}

func notFoundConversation(id, param string) error {
	return &wire.Error{Kind: wire.ErrNotFound, Param: param, Msg: "Conversation with id '" + id + "' not found."}
}

func notFoundItem(id string) error {
	return &wire.Error{Kind: wire.ErrNotFound, Param: "item_id", Msg: "Item with id '" + id + "' not found."}
}

func tooLargeConversation(param string) error {
	return &wire.Error{Kind: wire.ErrMalformedRequest, Param: param, Msg: "These items would take the conversation over Relay's bound per conversation (RELAY_RESPONSES_MAX_BYTES): start a new conversation."}
}

// newConversationID mints "conv_" and 192 random bits in hex.
func newConversationID() string { return "conv_" + randomHex(24) }

// validConversationID: an id Relay could have minted. Any other is a 404
// without a look in the store.
func validConversationID(id string) bool {
	hex, ok := strings.CutPrefix(id, "conv_")
	if !ok || len(hex) != 48 {
		return false
	}
	for i := 0; i < len(hex); i++ {
		if c := hex[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// convBody is a create, update or add-items body, checked.
type convBody struct {
	items    []json.RawMessage // with an id each, nil when absent
	metadata map[string]string // nil when absent or null
}

// decodeConversationBody reads the body of POST /v1/conversations
// (metadata and items, both optional), of POST /v1/conversations/{id}
// (update: metadata, required) and of POST …/items (items). Each item
// gets an id when it has none and a message's string content becomes its
// parts, as the conversation lists it.
func decodeConversationBody(body []byte, update bool) (convBody, *wire.Error) {
	var q convBody
	var m map[string]json.RawMessage
	if len(bytes.TrimSpace(body)) == 0 && !update {
		return q, nil
	}
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return q, &wire.Error{Kind: wire.ErrMalformedRequest, Msg: "The request body must be a JSON object."}
	}
	for k, v := range m {
		switch {
		case k == "metadata":
			meta, werr := decodeMetadata(v)
			if werr != nil {
				return q, werr
			}
			q.metadata = meta
		case k == "items" && !update:
			if isNull(v) {
				continue
			}
			var items []json.RawMessage
			if json.Unmarshal(v, &items) != nil {
				return q, &wire.Error{Kind: wire.ErrMalformedRequest, Param: "items", Msg: "items must be an array of input items."}
			}
			if len(items) == 0 || len(items) > maxConvItems {
				return q, &wire.Error{Kind: wire.ErrMalformedRequest, Param: "items", Msg: "items must hold 1 to 20 items; add more in further calls."}
			}
			for i, it := range items {
				if werr := checkConvItem(it, "items["+strconv.Itoa(i)+"]"); werr != nil {
					return q, werr
				}
			}
			q.items = conversationItems(items)
		default:
			return q, &wire.Error{Kind: wire.ErrMalformedRequest, Param: k, Msg: "Unknown parameter: '" + k + "'."}
		}
	}
	if update && q.metadata == nil {
		return q, &wire.Error{Kind: wire.ErrMalformedRequest, Param: "metadata", Msg: "Missing required parameter: 'metadata'."}
	}
	return q, nil
}

func decodeMetadata(v json.RawMessage) (map[string]string, *wire.Error) {
	if isNull(v) {
		return nil, nil
	}
	var meta map[string]string
	if json.Unmarshal(v, &meta) != nil {
		return nil, &wire.Error{Kind: wire.ErrMalformedRequest, Param: "metadata", Msg: "metadata must be an object of string values."}
	}
	if len(meta) > maxMetadataKeys {
		return nil, &wire.Error{Kind: wire.ErrMalformedRequest, Param: "metadata", Msg: "metadata may hold at most 16 pairs."}
	}
	for k, val := range meta {
		if utf8.RuneCountInString(k) > maxMetadataKey {
			return nil, &wire.Error{Kind: wire.ErrMalformedRequest, Param: "metadata", Msg: "A metadata key is longer than 64 characters."}
		}
		if utf8.RuneCountInString(val) > maxMetadataVal {
			return nil, &wire.Error{Kind: wire.ErrMalformedRequest, Param: "metadata." + k, Msg: "A metadata value is longer than 512 characters."}
		}
	}
	if meta == nil {
		meta = map[string]string{}
	}
	return meta, nil
}

// checkConvItem refuses what cannot be a conversation's item: not an
// object, no type and no role, a reference (a conversation holds items,
// not pointers to them).
func checkConvItem(it json.RawMessage, param string) *wire.Error {
	var v struct {
		Type *string         `json:"type"`
		Role json.RawMessage `json:"role"`
		ID   *string         `json:"id"`
	}
	if !isObjectJSON(it) || json.Unmarshal(it, &v) != nil {
		return &wire.Error{Kind: wire.ErrMalformedRequest, Param: param, Msg: "An item must be an input item object."}
	}
	switch {
	case v.Type == nil && isNull(v.Role):
		return &wire.Error{Kind: wire.ErrMalformedRequest, Param: param + ".type", Msg: "An item needs a type (or a role, for a message)."}
	case v.Type != nil && (*v.Type == "item_reference" || *v.Type == ""):
		return &wire.Error{Kind: wire.ErrMalformedRequest, Param: param + ".type", Msg: "A conversation holds items, not references: send the item itself."}
	case v.ID != nil && (*v.ID == "" || len(*v.ID) > 256):
		return &wire.Error{Kind: wire.ErrMalformedRequest, Param: param + ".id", Msg: "An item id must be 1 to 256 characters."}
	}
	return nil
}

func isObjectJSON(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 1 && raw[0] == '{'
}

// conversationItems gives every item an id and every message's string
// content its parts (input_text, or output_text for the assistant), as a
// conversation lists its items.
func conversationItems(items []json.RawMessage) []json.RawMessage {
	out := withItemIDs(items)
	for i, it := range out {
		var m map[string]json.RawMessage
		if json.Unmarshal(it, &m) != nil {
			continue
		}
		content := bytes.TrimSpace(m["content"])
		if len(content) == 0 || content[0] != '"' {
			continue
		}
		var typ, role, text string
		_ = json.Unmarshal(m["type"], &typ)
		_ = json.Unmarshal(m["role"], &role)
		if typ != "message" || json.Unmarshal(content, &text) != nil {
			continue
		}
		part := "input_text"
		if role == "assistant" {
			part = "output_text"
		}
		parts := []map[string]any{{"type": part, "text": text}}
		if part == "output_text" {
			parts[0]["annotations"] = []any{}
		}
		m["content"], _ = json.Marshal(parts)
		if b, err := json.Marshal(m); err == nil {
			out[i] = b
		}
	}
	return out
}

// writeItemList answers items as the spec's ConversationItemList.
func (rq *request) writeItemList(items []json.RawMessage, more bool) {
	b := append(rq.out[:0], `{"object":"list","data":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	b = append(b, `],"first_id":`...)
	first, last := "", ""
	if len(items) > 0 {
		first, last = respstore.ItemID(items[0]), respstore.ItemID(items[len(items)-1])
	}
	b = wire.AppendString(b, first)
	b = append(b, `,"last_id":`...)
	b = wire.AppendString(b, last)
	b = append(b, `,"has_more":`...)
	b = strconv.AppendBool(b, more)
	rq.out = append(b, '}')
	rq.respond(http.StatusOK, "application/json", rq.out)
}

// conversationParam reads the conversation of a Responses body: an id or
// {"id": …}; "" when absent.
func conversationParam(raw json.RawMessage) (string, *wire.Error) {
	if isNull(raw) {
		return "", nil
	}
	var id string
	if json.Unmarshal(raw, &id) != nil {
		var obj struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(raw, &obj) != nil || !isObjectJSON(raw) {
			return "", &wire.Error{Kind: wire.ErrMalformedRequest, Param: "conversation", Msg: "conversation must be a conversation id or {\"id\": …}."}
		}
		id = obj.ID
	}
	if id == "" {
		return "", &wire.Error{Kind: wire.ErrMalformedRequest, Param: "conversation", Msg: "conversation must be a conversation id or {\"id\": …}."}
	}
	return id, nil
}

// appendConversation adds a kept answer's turn to its conversation: the
// request's own input items, then the answer's output.
func (rq *request) appendConversation(output []json.RawMessage) {
	st := rq.st
	items := append(conversationItems(st.added), withItemIDs(output)...)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rq.r.Context()), storeTimeout)
	defer cancel()
	switch err := rq.h.responses.AppendItems(ctx, rq.project(), st.conv, items); {
	case errors.Is(err, respstore.ErrTooLarge):
		rq.h.log.Info("turn not added to its conversation: over RELAY_RESPONSES_MAX_BYTES", "request_id", rq.id, "conversation_id", st.conv)
	case err != nil:
		rq.h.log.Warn("append to conversation", "request_id", rq.id, "conversation_id", st.conv, "error", err)
	}
}
