package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestScanRequest_ReadsRoutingFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		body         string
		model        string
		stream       bool
		includeUsage bool
	}{
		{"plain", `{"model":"gpt-4o","messages":[]}`, "gpt-4o", false, false},
		{"whitespace", " \n{ \"model\" : \"m\" , \"stream\" : true }\n", "m", true, false},
		{"stream false", `{"model":"m","stream":false}`, "m", false, false},
		{"stream string is not stream", `{"model":"m","stream":"true"}`, "m", false, false},
		{"include usage", `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`, "m", true, true},
		{"include usage false", `{"model":"m","stream":true,"stream_options":{"include_usage":false}}`, "m", true, false},
		{"nested model ignored", `{"messages":[{"model":"x"}],"model":"real"}`, "real", false, false},
		{"last duplicate wins", `{"model":"a","model":"b"}`, "b", false, false},
		{"escaped model", `{"model":"gpt\u002d4"}`, "gpt-4", false, false},
		{"model with at", `{"model":"claude@vertex"}`, "claude@vertex", false, false},
		{"unicode content", `{"model":"m","messages":[{"content":"héllo \"q\" \\ ✓"}]}`, "m", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := ScanRequest([]byte(tt.body))
			if err != nil {
				t.Fatalf("ScanRequest: %v", err)
			}
			if r.Model != tt.model || r.Stream != tt.stream || r.IncludeUsage != tt.includeUsage {
				t.Errorf("got model=%q stream=%v include_usage=%v, want %q %v %v", r.Model, r.Stream, r.IncludeUsage, tt.model, tt.stream, tt.includeUsage)
			}
			if r.Size != len(tt.body) {
				t.Errorf("Size = %d, want %d", r.Size, len(tt.body))
			}
		})
	}
}

func TestScanRequest_RejectsBadBodies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want error
	}{
		{"empty", ``, ErrNotObject},
		{"array", `[{"model":"m"}]`, ErrNotObject},
		{"no model", `{"messages":[]}`, ErrMissingModel},
		{"empty model", `{"model":""}`, ErrMissingModel},
		{"model not string", `{"model":42}`, ErrMissingModel},
		{"truncated", `{"model":"m","messages":[`, nil},
		{"trailing garbage", `{"model":"m"} x`, nil},
		{"bad literal", `{"model":"m","stream":tru}`, nil},
		{"bad number", `{"model":"m","n":01}`, nil},
		{"control char", "{\"model\":\"m\x01\"}", nil},
		{"bad escape", `{"model":"m\q"}`, nil},
		{"missing colon", `{"model" "m"}`, nil},
		{"trailing comma", `{"model":"m",}`, nil},
		{"deep", strings.Repeat("[", 2000) + strings.Repeat("]", 2000), ErrNotObject},
		{"deep inside", `{"model":"m","x":` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + `}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ScanRequest([]byte(tt.body))
			if err == nil {
				t.Fatal("ScanRequest succeeded, want an error")
			}
			var se *SyntaxError
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
			if tt.want == nil && !errors.As(err, &se) {
				t.Errorf("err = %v, want a *SyntaxError", err)
			}
		})
	}
}

func TestAppendRewritten_SplicesModelAndUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		rw   Rewrite
		want string
	}{
		{"model", `{"model":"alias","stream":false}`, Rewrite{Model: "gpt-4o"}, `{"model":"gpt-4o","stream":false}`},
		{"model needs escaping", `{"model":"a"}`, Rewrite{Model: `we"ird`}, `{"model":"we\"ird"}`},
		{"usage added", `{"model":"m","stream":true}`, Rewrite{IncludeUsage: true}, `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`},
		{"usage into options", `{"model":"m","stream_options":{"x":1},"stream":true}`, Rewrite{IncludeUsage: true}, `{"model":"m","stream_options":{"include_usage":true,"x":1},"stream":true}`},
		{"usage into empty options", `{"model":"m","stream_options":{ },"stream":true}`, Rewrite{IncludeUsage: true}, `{"model":"m","stream_options":{"include_usage":true },"stream":true}`},
		{"usage false flipped", `{"model":"m","stream_options":{"include_usage":false}}`, Rewrite{IncludeUsage: true}, `{"model":"m","stream_options":{"include_usage":true}}`},
		{"null options replaced", `{"model":"m","stream_options":null}`, Rewrite{IncludeUsage: true}, `{"model":"m","stream_options":{"include_usage":true}}`},
		{"both, usage first in body", `{"stream_options":{},"model":"a"}`, Rewrite{Model: "b", IncludeUsage: true}, `{"stream_options":{"include_usage":true},"model":"b"}`},
		{"both", "{\"model\":\"a\",\n\"stream\":true\n}", Rewrite{Model: "bb", IncludeUsage: true}, "{\"model\":\"bb\",\n\"stream\":true\n,\"stream_options\":{\"include_usage\":true}}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := ScanRequest([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if !r.NeedsRewrite(tt.rw) {
				t.Fatal("NeedsRewrite = false")
			}
			got := string(AppendRewritten(nil, []byte(tt.body), &r, tt.rw))
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("not valid JSON: %s", got)
			}
		})
	}
}

func TestNeedsRewrite_FalseWhenNothingChanges(t *testing.T) {
	t.Parallel()
	r, err := ScanRequest([]byte(`{"model":"m","stream":true,"stream_options":{"include_usage":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.NeedsRewrite(Rewrite{Model: "m", IncludeUsage: true}) {
		t.Error("NeedsRewrite = true for an identical body")
	}
}

func TestAppendString_MatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", `q"b\s`, "tab\tnl\ncr\r", "\x00\x1f", "<a&b>", "ünï✓"} {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func TestGet_FindsNestedValues(t *testing.T) {
	t.Parallel()
	doc := []byte(` {"a":{"b":[1,2],"c":{"d":-42}},"e":"x","a2":null} `)
	tests := []struct {
		path []string
		want string
		ok   bool
	}{
		{[]string{"a", "b"}, `[1,2]`, true},
		{[]string{"a", "c", "d"}, `-42`, true},
		{[]string{"e"}, `"x"`, true},
		{[]string{"a2"}, `null`, true},
		{[]string{"missing"}, ``, false},
		{[]string{"e", "x"}, ``, false},
	}
	for _, tt := range tests {
		got, ok := Get(doc, tt.path...)
		if ok != tt.ok || string(got) != tt.want {
			t.Errorf("Get(%v) = %q, %v; want %q, %v", tt.path, got, ok, tt.want, tt.ok)
		}
	}
	if n, ok := GetInt(doc, "a", "c", "d"); !ok || n != -42 {
		t.Errorf("GetInt = %d, %v", n, ok)
	}
	if _, ok := GetInt(doc, "a2"); ok {
		t.Error("GetInt(null) ok")
	}
}

func TestJoinURL_ToleratesV1(t *testing.T) {
	t.Parallel()
	for base, want := range map[string]string{
		"https://api.openai.com":        "https://api.openai.com/v1/chat/completions",
		"https://api.openai.com/":       "https://api.openai.com/v1/chat/completions",
		"https://api.openai.com/v1":     "https://api.openai.com/v1/chat/completions",
		"https://api.openai.com/v1/":    "https://api.openai.com/v1/chat/completions",
		"http://vllm:8000/proxy/v1":     "http://vllm:8000/proxy/v1/chat/completions",
		"http://vllm:8000/proxy/v1beta": "http://vllm:8000/proxy/v1beta/v1/chat/completions",
	} {
		if got := JoinURL(base, "/v1/chat/completions"); got != want {
			t.Errorf("JoinURL(%q) = %q, want %q", base, got, want)
		}
	}
}

func TestScanRequest_MaxTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body string
		want int64
	}{
		{`{"model":"m"}`, 0},
		{`{"model":"m","max_tokens":256}`, 256},
		{`{"model":"m","max_completion_tokens":300,"max_tokens":100}`, 300},
		{`{"model":"m","max_output_tokens":64}`, 64},
		{`{"model":"m","max_tokens":-5}`, 0},
		{`{"model":"m","max_tokens":"many"}`, 0},
		{`{"model":"m","messages":[{"max_tokens":9}]}`, 0},
	}
	for _, tt := range tests {
		r, err := ScanRequest([]byte(tt.body))
		if err != nil {
			t.Fatalf("%s: %v", tt.body, err)
		}
		if r.MaxTokens != tt.want {
			t.Errorf("%s: MaxTokens = %d, want %d", tt.body, r.MaxTokens, tt.want)
		}
	}
}

func TestJoinURL_ToleratesV1beta(t *testing.T) {
	t.Parallel()
	const path = "/v1beta/models/gemini-2.5-flash:generateContent"
	for base, want := range map[string]string{
		"https://generativelanguage.googleapis.com":         "https://generativelanguage.googleapis.com" + path,
		"https://generativelanguage.googleapis.com/v1beta":  "https://generativelanguage.googleapis.com" + path,
		"https://generativelanguage.googleapis.com/v1beta/": "https://generativelanguage.googleapis.com" + path,
	} {
		if got := JoinURL(base, path); got != want {
			t.Errorf("JoinURL(%q) = %q, want %q", base, got, want)
		}
	}
}
