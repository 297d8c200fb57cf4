package wire

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

func TestScanRoute_Facts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body  string
		session     string
		from        string
		tools, json bool
		images      int
		hint        string
	}{
		{"chat with cache key", `{"model":"m","prompt_cache_key":"s-1","tools":[{"type":"function"}],"messages":[{"role":"user","content":[{"type":"text","text":"x"},{"type":"image_url","image_url":{"url":"data:..."}}]}]}`,
			"s-1", "prompt_cache_key", true, false, 1, ""},
		{"claude code", `{"model":"m","metadata":{"user_id":"user_ab_session_42","relay_route":"cost=min"},"system":"s","messages":[{"role":"user","content":[{"type":"image","source":{}}]}]}`,
			"user_ab_session_42", "metadata.user_id", false, false, 1, "cost=min"},
		{"responses conversation object", `{"model":"m","conversation":{"id":"conv_1"},"input":[{"type":"input_image","image_url":"x"}],"text":{"format":{"type":"json_schema"}}}`,
			"conv_1", "conversation", false, true, 1, ""},
		{"previous response", `{"model":"m","previous_response_id":"resp_9","input":"hi"}`, "resp_9", "previous_response_id", false, false, 0, ""},
		{"empty tools, json object", `{"model":"m","tools":[],"response_format":{"type":"json_object"},"messages":[]}`, "", "", false, true, 0, ""},
		{"gemini", `{"contents":[{"parts":[{"inlineData":{"mimeType":"image/png","data":"AAAA"}}]}],"generationConfig":{"responseSchema":{}}}`, "", "", false, true, 1, ""},
		{"empty cache key falls through", `{"model":"m","prompt_cache_key":"","metadata":{"user_id":"u"}}`, "u", "metadata.user_id", false, false, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := ScanRoute([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if string(f.Session) != tt.session || f.SessionFrom != tt.from || f.Tools != tt.tools || f.JSONSchema != tt.json || f.Images != tt.images || string(f.Hint) != tt.hint {
				t.Errorf("facts %+v (session %q hint %q)", f, f.Session, f.Hint)
			}
			// The proxy reads them from ScanRequest's walk: the same facts.
			r, _ := ScanRequest([]byte(tt.body))
			if one, err := r.Route([]byte(tt.body)); err != nil || !reflect.DeepEqual(one, f) {
				t.Errorf("Request.Route = %+v, %v; ScanRoute = %+v", one, err, f)
			}
		})
	}
}

func TestScanRoute_PrefixIsStable(t *testing.T) {
	t.Parallel()
	turn1 := `{"model":"m","system":"be brief","messages":[{"role":"user","content":"first"}]}`
	turn2 := `{"model":"m","max_tokens":9,"system":"be brief","messages":[{"role":"user","content":"first"},{"role":"assistant","content":"ok"},{"role":"user","content":"second"}]}`
	other := `{"model":"m","system":"be brief","messages":[{"role":"user","content":"another task"}]}`
	a, _ := ScanRoute([]byte(turn1))
	b, _ := ScanRoute([]byte(turn2))
	c, _ := ScanRoute([]byte(other))
	if a.Prefix == 0 || a.Prefix != b.Prefix || a.Prefix == c.Prefix {
		t.Fatalf("prefixes %x %x %x: want turns of one conversation equal, another conversation apart", a.Prefix, b.Prefix, c.Prefix)
	}
}

func TestScanRoute_RefusesDuplicates(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"model":"m","tools":[],"tools":[{"type":"function"}]}`,
		`{"model":"m","Tools":[{"type":"function"}]}`,
		`{"model":"m","prompt_cache_key":"a","prompt_cache_key":"b"}`,
		`{"model":"m","metadata":{},"\u006detadata":{"user_id":"x"}}`,
	} {
		_, err := ScanRoute([]byte(body))
		var we *Error
		if !errors.As(err, &we) || !errors.Is(err, ErrMalformedRequest) {
			t.Errorf("%s: err %v, want a refusal", body, err)
		}
	}
}

func TestScanRoute_DoesNotAllocate(t *testing.T) {
	body := []byte(`{"model":"m","prompt_cache_key":"k","metadata":{"user_id":"u"},"system":"s","tools":[{"type":"function"}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"x"}}]}]}`)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := ScanRoute(body); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("ScanRoute allocates %v times", allocs)
	}
}

func TestRequest_RouteDoesNotAllocate(t *testing.T) {
	body := []byte(`{"model":"m","prompt_cache_key":"k","metadata":{"user_id":"u"},"system":"s","tools":[{"type":"function"}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"x"}}]}]}`)
	r, err := ScanRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := r.Route(body); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Request.Route allocates %v times", allocs)
	}
}

func FuzzScanRoute(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","prompt_cache_key":"s","tools":[1],"messages":[{"content":[{"type":"image"}]}]}`,
		`{"metadata":{"user_id":"u","relay_route":"cost=min"},"conversation":{"id":"c"},"input":"x"}`,
		`{"contents":[{"parts":[{"inlineData":{"mimeType":"image/png"}}]}],"generationConfig":{"responseSchema":{}}}`,
		`{"text":{"format":{"type":"json_schema"}},"input":[{"type":"input_image"}]}`,
		`{"Tools":[],"tools":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := ScanRequest(body)
		if err != nil && !errors.Is(err, ErrMissingModel) {
			return
		}
		rf, err := ScanRoute(body)
		// The facts from ScanRequest's walk are ScanRoute's own.
		if one, oneErr := r.Route(body); !reflect.DeepEqual(one, rf) || fmt.Sprint(oneErr) != fmt.Sprint(err) {
			t.Fatalf("Request.Route = %+v, %v; ScanRoute = %+v, %v for %q", one, oneErr, rf, err, body)
		}
		if err != nil {
			return
		}
		if rf.Images < 0 || rf.MediaBytes > len(body) || rf.EstimatedPromptTokens(len(body)) < 0 {
			t.Fatalf("facts %+v for %q", rf, body)
		}
	})
}

func BenchmarkScanRoute(b *testing.B) {
	for _, bb := range benchBodies {
		body := []byte(bb.body)
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := ScanRoute(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
