package respstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Errors a Store returns.
var (
	// ErrNotFound: no such response in this project (never made, made by
	// another project, deleted or expired).
	ErrNotFound = errors.New("respstore: not found")
	// ErrTooLarge: Put kept a marker (Record.Dropped) instead of a
	// record over Limits.MaxBytes.
	ErrTooLarge = errors.New("respstore: response state over the bound")
)

// Record is one stored response.
type Record struct {
	ID        string `json:"id"`
	CreatedAt int64  `json:"created_at"` // unix seconds
	Model     string `json:"model,omitempty"`
	// Response is the response object as the caller received it.
	Response json.RawMessage `json:"response,omitempty"`
	// Input is every item the model saw before it answered, in order: the
	// history it continued, then the request's own input, references
	// expanded. Each item has an id.
	Input []json.RawMessage `json:"input,omitempty"`
	// Output is the response's output items.
	Output []json.RawMessage `json:"output,omitempty"`
	// Upstream, when set, is the host (slug) that keeps this response
	// itself: an openai_responses binding made it with store on, and its
	// id means something there.
	Upstream string `json:"upstream,omitempty"`
	// Dropped > 0 marks a response whose state (Dropped bytes) was over
	// Limits.MaxBytes: the marker says so, the state is gone.
	Dropped int64 `json:"dropped,omitempty"`
}

// Loaded is what Load found.
type Loaded struct {
	// Response is the response asked for; nil when none was asked for or
	// it was not found.
	Response *Record
	// Items are the items asked for that were found, by id.
	Items map[string]json.RawMessage
}

// Limits bound what a Store keeps.
type Limits struct {
	TTL             time.Duration // how long a response is kept; 0: 720h
	MaxBytes        int64         // the most one response's record may hold; 0: 4 MiB
	ProjectMaxBytes int64         // the most one project may hold; 0: 256 MiB
}

// Defaults for zero Limits fields.
const (
	DefaultTTL             = 30 * 24 * time.Hour
	DefaultMaxBytes        = 4 << 20
	DefaultProjectMaxBytes = 256 << 20
)

func (l Limits) withDefaults() Limits {
	if l.TTL <= 0 {
		l.TTL = DefaultTTL
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.ProjectMaxBytes <= 0 {
		l.ProjectMaxBytes = DefaultProjectMaxBytes
	}
	return l
}

// Store keeps stored responses and conversations, scoped by project.
// Memory and Redis implement it.
type Store interface {
	ConversationStore
	// Load returns, in one round trip, the response id (none when "")
	// and the items itemIDs name, as far as they are found in project.
	Load(ctx context.Context, project, id string, itemIDs []string) (Loaded, error)
	// Put keeps rec under its ID, evicting the project's oldest
	// responses when it holds more than the bound. A record over
	// MaxBytes is kept as a marker and Put returns ErrTooLarge.
	Put(ctx context.Context, project string, rec *Record) error
	// Delete removes a response; ErrNotFound when there is none.
	Delete(ctx context.Context, project, id string) error
	// Limits returns the bounds in force, defaults applied.
	Limits() Limits
}

// Encode is rec as the store keeps it.
func Encode(rec *Record) []byte {
	b, _ := json.Marshal(rec) // RawMessages were checked by Put's caller or come from Decode
	return b
}

// Decode reads a record the store kept. It refuses what Encode would not
// make: a record without an id, items that are not JSON objects.
func Decode(data []byte) (*Record, error) {
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("decode stored response: %w", err)
	}
	if rec.ID == "" {
		return nil, errors.New("decode stored response: no id")
	}
	if len(rec.Response) > 0 && !isObject(rec.Response) {
		return nil, errors.New("decode stored response: the response is not an object")
	}
	for _, list := range [][]json.RawMessage{rec.Input, rec.Output} {
		for _, it := range list {
			if !isObject(it) {
				return nil, errors.New("decode stored response: an item is not an object")
			}
		}
	}
	return &rec, nil
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 1 && raw[0] == '{'
}

// ItemID is the "id" of an item, "" when it has none.
func ItemID(item json.RawMessage) string {
	var v struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(item, &v) != nil {
		return ""
	}
	return v.ID
}

// itemIDs lists the ids of rec's items, each once.
func itemIDs(rec *Record) []string {
	seen := map[string]bool{}
	var ids []string
	for _, list := range [][]json.RawMessage{rec.Input, rec.Output} {
		for _, it := range list {
			if id := ItemID(it); id != "" && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// prepare encodes rec for Put, or the marker that replaces it when it is
// over max; the ids are the items the record holds.
func prepare(rec *Record, max int64) (data []byte, ids []string, err error) {
	data = Encode(rec)
	if n := int64(len(data)); n > max {
		marker := &Record{ID: rec.ID, CreatedAt: rec.CreatedAt, Model: rec.Model, Dropped: n}
		return Encode(marker), nil, ErrTooLarge
	}
	return data, itemIDs(rec), nil
}

// findItems picks the items ids names out of records.
func findItems(ids []string, records []*Record) map[string]json.RawMessage {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	out := map[string]json.RawMessage{}
	for _, rec := range records {
		for _, list := range [][]json.RawMessage{rec.Output, rec.Input} {
			for _, it := range list {
				if id := ItemID(it); want[id] {
					if _, ok := out[id]; !ok {
						out[id] = it
					}
				}
			}
		}
	}
	return out
}
