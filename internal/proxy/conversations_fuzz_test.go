package proxy

import (
	"encoding/json"
	"testing"

	"github.com/relay-llm/relay/internal/respstore"
)

// FuzzConversationBody holds the decoders of the Conversations API:
// decodeConversationBody never panics, refuses with a 400 that names a
// member or keeps only what the spec allows (at most 20 items, each a JSON
// object with an id; at most 16 metadata pairs), and conversationParam
// reads an id or refuses.
func FuzzConversationBody(f *testing.F) {
	f.Add([]byte(`{"items":[{"role":"user","content":"hi"},{"type":"function_call_output","call_id":"c","output":"x"}],"metadata":{"k":"v"}}`), false)
	f.Add([]byte(`{"items":[{"type":"message","role":"assistant","content":"hello","id":"msg_1"}]}`), false)
	f.Add([]byte(`{"items":[{"type":"item_reference","id":"x"}]}`), false)
	f.Add([]byte(`{"metadata":{"k":"v"}}`), true)
	f.Add([]byte(`{"metadata":null}`), true)
	f.Add([]byte(`{"items":null,"metadata":null}`), false)
	f.Add([]byte(`[]`), false)
	f.Add([]byte(``), false)
	f.Add([]byte(`"conv_1"`), false)
	f.Add([]byte(`{"id":"conv_1"}`), false)
	f.Fuzz(func(t *testing.T, body []byte, update bool) {
		q, werr := decodeConversationBody(body, update)
		if werr != nil {
			if werr.Msg == "" {
				t.Fatalf("an error without a message for %q", body)
			}
		} else {
			if len(q.items) > maxConvItems || len(q.metadata) > maxMetadataKeys || update && q.metadata == nil {
				t.Fatalf("kept %d items, %d pairs from %q", len(q.items), len(q.metadata), body)
			}
			for _, it := range q.items {
				var m map[string]json.RawMessage
				if json.Unmarshal(it, &m) != nil || respstore.ItemID(it) == "" {
					t.Fatalf("item %s from %q", it, body)
				}
			}
		}
		id, perr := conversationParam(body)
		if perr == nil && !isNull(body) && id == "" {
			t.Fatalf("no id and no error for %q", body)
		}
	})
}
