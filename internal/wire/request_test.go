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
		{"stream null", `{"model":"m","stream":null,"stream_options":{"include_usage":null}}`, "m", false, false},
		{"include usage", `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`, "m", true, true},
		{"include usage false", `{"model":"m","stream":true,"stream_options":{"include_usage":false}}`, "m", true, false},
		{"nested model ignored", `{"messages":[{"model":"x"}],"model":"real"}`, "real", false, false},
		{"escaped model", `{"model":"gpt\u002d4"}`, "gpt-4", false, false},
		{"escaped keys", `{"mod\u0065l":"m","\u0073tream":true,"stream_options":{"include\u005Fusage":true}}`, "m", true, true},
		{"escaped solidus key", `{"model":"m","str\/eam":true}`, "m", false, false},
		{"surrogate pair in model", `{"model":"a\ud83d\ude00b"}`, "a😀b", false, false},
		{"duplicates Relay does not read", `{"model":"m","messages":[],"messages":[1],"metadata":{"a":1,"a":2},"stream_options":{"x":1,"x":2}}`, "m", false, false},
		{"nested read names", `{"model":"m","metadata":{"model":"x","Model":"y","stream":"yes"}}`, "m", false, false},
		{"dotless i is not i", `{"model":"m","stream_options":{"\u0131nclude_usage":true}}`, "m", false, false},
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

func TestScanRequest_RefusesAmbiguousMembers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, param string
	}{
		{"duplicate model", `{"model":"a","model":"b"}`, "model"},
		{"escaped duplicate model", `{"model":"granted","messages":[],"mod\u0065l":"other"}`, "model"},
		{"escaped duplicate first", `{"\u006dodel":"other","model":"granted"}`, "model"},
		{"escaped duplicate stream", `{"model":"m","stream":false,"str\u0065am":true}`, "stream"},
		{"duplicate stream_options", `{"model":"m","stream_options":{},"stream_options":{"include_usage":true}}`, "stream_options"},
		{"duplicate include_usage", `{"model":"m","stream":true,"stream_options":{"include_usage":true,"include_usage":false}}`, "stream_options.include_usage"},
		{"escaped duplicate include_usage", `{"model":"m","stream":true,"stream_options":{"include_usage":true,"include_\u0075sage":false}}`, "stream_options.include_usage"},
		{"duplicate max_tokens", `{"model":"m","max_tokens":1,"max_tok\u0065ns":100000}`, "max_tokens"},
		{"duplicate max_completion_tokens", `{"model":"m","max_completion_tokens":1,"max_completion_tokens":2}`, "max_completion_tokens"},
		{"duplicate max_output_tokens", `{"max_output_tokens":1,"model":"m","max_output_tokens":2}`, "max_output_tokens"},
		{"case variant model", `{"model":"granted","Model":"other"}`, "model"},
		{"case variant alone", `{"MODEL":"other"}`, "model"},
		{"long s stream", `{"model":"m","\u017ftream":true}`, "stream"},
		{"long s stream raw", "{\"model\":\"m\",\"\u017ftream\":true}", "stream"},
		{"kelvin max_tokens", `{"model":"m","max_to\u212aens":9}`, "max_tokens"},
		{"long s include_usage", `{"model":"m","stream_options":{"include_u\u017Fage":true}}`, "stream_options.include_usage"},
		{"case variant stream_options", `{"model":"m","Stream_Options":{"include_usage":true}}`, "stream_options"},
		{"stream string", `{"model":"m","stream":"true"}`, "stream"},
		{"stream number", `{"model":"m","stream":1}`, "stream"},
		{"include_usage number", `{"model":"m","stream_options":{"include_usage":1}}`, "stream_options.include_usage"},
		{"model invalid UTF-8", "{\"model\":\"gr\xffanted\"}", "model"},
		{"model lone surrogate", `{"model":"granted\ud800"}`, "model"},
		{"model reversed surrogates", `{"model":"\udc00\ud800"}`, "model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ScanRequest([]byte(tt.body))
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrMalformedRequest) {
				t.Fatalf("err = %v, want an *Error of kind ErrMalformedRequest", err)
			}
			if e.Param != tt.param || !strings.Contains(e.Msg, `"`+tt.param+`"`) {
				t.Errorf("param %q, message %q; want both to name %q", e.Param, e.Msg, tt.param)
			}
		})
	}
}

func TestScanRequest_DuplicateMessageNamesMember(t *testing.T) {
	t.Parallel()
	_, err := ScanRequest([]byte(`{"model":"granted","mod\u0065l":"other"}`))
	if err == nil || err.Error() != `Duplicate member "model" in request body; send it once.` {
		t.Errorf("err = %v", err)
	}
	_, err = ScanRequest([]byte(`{"model":"m","Mod\u0065l":"other"}`))
	if err == nil || !strings.Contains(err.Error(), `Member "Model" in request body differs from "model" only in case`) {
		t.Errorf("err = %v", err)
	}
}

func TestScanRequest_SyntaxErrorBeforeRefusal(t *testing.T) {
	t.Parallel()
	_, err := ScanRequest([]byte(`{"model":"a","model":"b",`))
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Errorf("err = %v, want a *SyntaxError", err)
	}
}

func TestAppendRewritten_SplicesEscapedModelSpelledPlain(t *testing.T) {
	t.Parallel()
	body := []byte(`{"model":"gr\u0061nted","stream":true}`)
	r, err := ScanRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	if r.Model != "granted" {
		t.Fatalf("Model = %q", r.Model)
	}
	rw := Rewrite{Model: "granted"}
	if !r.NeedsRewrite(rw) {
		t.Fatal("NeedsRewrite = false for an escaped model")
	}
	if got := string(AppendRewritten(nil, body, &r, rw)); got != `{"model":"granted","stream":true}` {
		t.Errorf("got %s", got)
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
		{`{"model":"m","max_tokens":"100"}`, 0},
		{`{"model":"m","max_tokens":null}`, 0},
		{`{"model":"m","max_tokens":1e5}`, 100000},
		{`{"model":"m","max_tokens":2.5}`, 3},
		{`{"model":"m","max_tokens":12E-1}`, 2},
		{`{"model":"m","max_tokens":-1e9}`, 0},
		{`{"model":"m","max_tokens":99999999999999999999999}`, MaxTokenLimit},
		{`{"model":"m","max_tokens":1e400}`, MaxTokenLimit},
		{`{"model":"m","max_t\u006fkens":77}`, 77},
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
