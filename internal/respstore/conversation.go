package respstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Conversations. A conversation (the Conversations API, /v1/conversations)
// is an object of its own: an id, a creation time, metadata and an ordered
// list of items, each with an id. Responses that name it read its items as
// the history they continue and append their input and output items to it.
// It lives beside the stored responses, in the same backend and under the
// same bounds: a conversation is kept Limits.TTL after its last change, its
// items may hold at most Limits.MaxBytes (an append that would go over is
// refused whole), and a project whose conversations hold more than
// Limits.ProjectMaxBytes loses the least recently changed ones first. Like
// every stored response it is scoped by project: another project's id is
// not found, exactly like a missing one.

// ErrItemNotFound: the conversation has no item with that id.
var ErrItemNotFound = errors.New("respstore: no such item in the conversation")

// Conversation is a conversation's object, as GET /v1/conversations/{id}
// answers it (without "object").
type Conversation struct {
	ID        string            `json:"id"`
	CreatedAt int64             `json:"created_at"` // unix seconds
	Metadata  map[string]string `json:"metadata"`
}

// ConversationState is a conversation and, when asked for, its items in
// order.
type ConversationState struct {
	Conversation
	Items []json.RawMessage
}

// ConversationStore keeps conversations, scoped by project. Memory and
// Redis implement it; every method is one round trip.
type ConversationStore interface {
	// CreateConversation keeps a new conversation with items (each with
	// an id); ErrTooLarge, and nothing kept, when they are over MaxBytes.
	CreateConversation(ctx context.Context, project string, c *Conversation, items []json.RawMessage) error
	// GetConversation returns the conversation, with its items when
	// items; ErrNotFound when there is none.
	GetConversation(ctx context.Context, project, id string, items bool) (*ConversationState, error)
	// AppendItems adds items (each with an id) at the end; an item whose
	// id the conversation holds already is left as it is. ErrNotFound,
	// or ErrTooLarge when the items would take it over MaxBytes (nothing
	// is added).
	AppendItems(ctx context.Context, project, id string, items []json.RawMessage) error
	// UpdateConversation replaces its metadata and returns it.
	UpdateConversation(ctx context.Context, project, id string, metadata map[string]string) (*Conversation, error)
	// DeleteConversation removes it and its items; ErrNotFound when
	// there is none.
	DeleteConversation(ctx context.Context, project, id string) error
	// DeleteItem removes one item and returns the conversation;
	// ErrNotFound or ErrItemNotFound.
	DeleteItem(ctx context.Context, project, id, itemID string) (*Conversation, error)
}

// encodeConversation is c as the store keeps it.
func encodeConversation(c *Conversation) []byte {
	v := *c
	if v.Metadata == nil {
		v.Metadata = map[string]string{}
	}
	b, _ := json.Marshal(&v) // strings only
	return b
}

// DecodeConversation reads a conversation the store kept. It refuses what
// encodeConversation would not make.
func DecodeConversation(data []byte) (*Conversation, error) {
	var c Conversation
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("decode stored conversation: %w", err)
	}
	if c.ID == "" {
		return nil, errors.New("decode stored conversation: no id")
	}
	if c.Metadata == nil {
		c.Metadata = map[string]string{}
	}
	return &c, nil
}

// uniqueItems is items with an id each, the first of each id kept, and
// their total size; ok false when an item has no id or is not an object.
func uniqueItems(items []json.RawMessage) (out []json.RawMessage, ids []string, size int64, ok bool) {
	seen := make(map[string]bool, len(items))
	for _, it := range items {
		id := ItemID(it)
		if id == "" || !isObject(it) {
			return nil, nil, 0, false
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, it)
		ids = append(ids, id)
		size += int64(len(it))
	}
	return out, ids, size, true
}

// errNoItemID is what a caller gets for an item without an id: the proxy
// gives every item one, so this is a bug of the caller of the package.
var errNoItemID = errors.New("respstore: a conversation item without an id")
