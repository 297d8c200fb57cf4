package wire

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func TestHintCut(t *testing.T) {
	for _, tt := range []struct {
		body, want, hint string
	}{
		{`{"model":"m","metadata":{"relay_route":"cost=min"}}`, `{"model":"m"}`, "cost=min"},
		{`{"metadata":{"relay_route":"cost=min"},"model":"m"}`, `{"model":"m"}`, "cost=min"},
		{`{"metadata" : { "relay_route" : "cost=min" } , "model":"m"}`, `{"model":"m"}`, "cost=min"},
		{`{"metadata":{"relay_route":"cost=min"}}`, `{}`, "cost=min"},
		{`{"model":"m","metadata":{"user_id":"u 1","relay_route":"latency=min"}}`, `{"model":"m","metadata":{"user_id":"u 1"}}`, "latency=min"},
		{`{"model":"m","metadata":{"relay_route":"latency=min", "user_id":"u"},"x":1}`, `{"model":"m","metadata":{"user_id":"u"},"x":1}`, "latency=min"},
		{`{"model":"m","metadata":{"a":"1","relay_route":"q","b":"2"}}`, `{"model":"m","metadata":{"a":"1","b":"2"}}`, "q"},
		{`{"model":"m","metadata":{"relay_route":null}}`, `{"model":"m"}`, ""},
		{`{"model":"m","metadata":{"relay\u005froute":"cost=min"}}`, `{"model":"m"}`, "cost=min"},
		{`{"model":"m","metadata":{"user_id":"u"}}`, `{"model":"m","metadata":{"user_id":"u"}}`, ""},
		{`{"model":"m","metadata":{}}`, `{"model":"m","metadata":{}}`, ""},
		{`{"model":"m","metadata":"relay_route"}`, `{"model":"m","metadata":"relay_route"}`, ""},
		{`{"model":"m","x":{"relay_route":"cost=min"}}`, `{"model":"m","x":{"relay_route":"cost=min"}}`, ""},
	} {
		f, err := ScanRoute([]byte(tt.body))
		if err != nil {
			t.Fatalf("%s: %v", tt.body, err)
		}
		if got := string(AppendCut(nil, []byte(tt.body), f.HintCut)); got != tt.want || string(f.Hint) != tt.hint {
			t.Errorf("%s: cut to %s, hint %q; want %s, %q", tt.body, got, f.Hint, tt.want, tt.hint)
		}
	}
}

func TestHintRefused(t *testing.T) {
	for _, body := range []string{
		`{"model":"m","metadata":{"relay_route":"cost=min","relay_route":"quality=max"}}`,
		`{"model":"m","metadata":{"Relay_Route":"cost=min"}}`,
		`{"model":"m","metadata":{"relay_route":"cost=min","relay\u005froute":"x"}}`,
	} {
		_, err := ScanRoute([]byte(body))
		var e *Error
		if !errors.As(err, &e) || !errors.Is(e.Kind, ErrMalformedRequest) || e.Param != "metadata.relay_route" {
			t.Errorf("%s: err %v, want a malformed request naming metadata.relay_route", body, err)
		}
	}
}

// TestHintRewrite: the hint is cut in the same splice as the model and
// stream_options, whatever their order in the body.
func TestHintRewrite(t *testing.T) {
	for _, body := range []string{
		`{"metadata":{"relay_route":"cost=min"},"model":"m","stream":true}`,
		`{"model":"m","stream":true,"stream_options":{},"metadata":{"relay_route":"cost=min"}}`,
		`{"model":"m","stream":true,"metadata":{"relay_route":"cost=min","k":"v"},"stream_options":{"include_usage":false}}`,
		`{"model":"m","stream":true,"stream_options":null,"metadata":{"k":"v","relay_route":"cost=min"}}`,
	} {
		checkHintCut(t, []byte(body))
	}
}

// FuzzHintCut holds the hint cut to encoding/json: cutting the bytes and
// decoding them equals decoding the body and deleting metadata.relay_route
// (and metadata, when that leaves it empty), alone and in one splice with
// the model and stream_options rewrites.
func FuzzHintCut(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","metadata":{"relay_route":"cost=min"}}`,
		`{"metadata":{"relay_route":"cost=min"},"model":"m"}`,
		`{ "metadata" : { "user_id" : "u" , "relay_route" : 1 } , "model" : "m" }`,
		`{"model":"m","metadata":{"relay_route":"x","a":{"relay_route":"y"}},"stream":true}`,
		`{"model":"m","metadata":{"relay\u005Froute":"x"},"stream_options":{}}`,
		`{"metadata":{"relay_route":[]}}`,
		`{"model":"m","metadata":{"relay_route":"x","relay_route":"y"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkHintCut(t, body)
	})
}

func checkHintCut(t *testing.T, body []byte) {
	t.Helper()
	var obj map[string]any
	if json.Unmarshal(body, &obj) != nil || obj == nil {
		return
	}
	facts, err := ScanRoute(body)
	if err != nil {
		return // a refusal: the scan differential holds those to the reference
	}
	out := AppendCut(nil, body, facts.HintCut)
	want := decodeObject(t, body)
	hint, had := deleteHint(want)
	if got := decodeObject(t, out); !reflect.DeepEqual(got, want) {
		t.Fatalf("cut of %q = %q", body, out)
	}
	if h, ok := hint.(string); ok != (facts.Hint != nil) || ok && !reflect.DeepEqual(decodeString(t, facts.Hint), h) {
		t.Fatalf("%q: hint %q, encoding/json reads %v", body, facts.Hint, hint)
	}
	if !had && !facts.HintCut.Empty() {
		t.Fatalf("%q: no hint, but a cut %+v", body, facts.HintCut)
	}
	r, err := ScanRequest(body)
	if err != nil {
		return
	}
	rw := Rewrite{Model: "up\"stream", IncludeUsage: true, Drop: facts.HintCut}
	out = AppendRewritten(nil, body, &r, rw)
	want["model"] = rw.Model
	opts, ok := want["stream_options"].(map[string]any)
	if !ok {
		opts = map[string]any{}
	}
	opts["include_usage"] = true
	want["stream_options"] = opts
	if got := decodeObject(t, out); !reflect.DeepEqual(got, want) {
		t.Fatalf("rewrite %+v of %q = %q", rw, body, out)
	}
}

// deleteHint deletes metadata.relay_route from a decoded body, and
// metadata when it is left empty; it returns the hint's value.
func deleteHint(obj map[string]any) (any, bool) {
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return nil, false
	}
	v, ok := meta["relay_route"]
	if !ok {
		return nil, false
	}
	delete(meta, "relay_route")
	if len(meta) == 0 {
		delete(obj, "metadata")
	}
	return v, true
}

func decodeString(t *testing.T, raw []byte) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s); err != nil {
		t.Fatalf("decode %q: %v", raw, err)
	}
	return s
}

// Reading and locating the hint allocates nothing: ScanRoute stays on the
// allocation-free hot path.
func TestHintAllocs(t *testing.T) {
	body := []byte(`{"model":"m","metadata":{"user_id":"u","relay_route":"cost=min"},"messages":[{"role":"user","content":"hi"}]}`)
	if n := testing.AllocsPerRun(100, func() { _, _ = ScanRoute(body) }); n != 0 {
		t.Fatalf("ScanRoute of a body with a hint: %v allocations", n)
	}
}
