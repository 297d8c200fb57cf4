package proxy

import (
	"encoding/json"
	"testing"
)

// FuzzStateInput holds what prepareState decodes of a caller's input:
// inputItems never panics, every item withItemIDs returns for an object is
// a JSON object with an id, and the expanded body is one JSON object.
func FuzzStateInput(f *testing.F) {
	f.Add([]byte(`"hello"`))
	f.Add([]byte(`[{"role":"user","content":"hi"},{"type":"item_reference","id":"fc_1"},{"id":"msg_2"},{}]`))
	f.Add([]byte(`[{"type":"function_call_output","call_id":"c","output":"x"},{ }]`))
	f.Add([]byte(`[1,"x",null]`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, input []byte) {
		items, refs, ok := inputItems(input)
		if !ok {
			return
		}
		for _, r := range refs {
			if r.id == "" || r.at < 0 || r.at >= len(items) {
				t.Fatalf("reference %+v of %d items", r, len(items))
			}
		}
		withIDs := withItemIDs(items)
		for i, it := range withIDs {
			var obj map[string]json.RawMessage
			if json.Unmarshal(items[i], &obj) != nil {
				continue // not an object: passed on for the translator to refuse
			}
			if json.Unmarshal(it, &obj) != nil || len(obj["id"]) < 3 {
				t.Fatalf("item %s became %s", items[i], it)
			}
		}
		body, err := expandedBody([]byte(`{"model":"m","previous_response_id":"resp_1","input":null}`), withIDs)
		if err != nil {
			return // an item that is not JSON (cannot happen: it came from one)
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) != nil || m["previous_response_id"] != nil {
			t.Fatalf("expanded body %s", body)
		}
	})
}
