package mockupstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestFault_Parse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in    string
		kind  faultKind
		spec  string
		extra int // status, retry-after, delay ms or events, by kind
	}{
		{"mock-fault-500", faultStatus, "500", 500},
		{"sk-mock-fault-429", faultStatus, "429", 1},
		{"gpt-fault-429-7-mini", faultStatus, "429-7", 7},
		{"fault-529", faultStatus, "529", 529},
		{"m_fault-slow", faultSlow, "slow", 2000},
		{"m/fault-slow-250", faultSlow, "slow-250", 250},
		{"m-fault-stall", faultStall, "stall", -1},
		{"m-fault-reset-0", faultReset, "reset-0", 0},
		{"m-fault-malformed-2", faultMalformed, "malformed-2", 2},
		{"m-fault-midstream", faultMidstream, "midstream", -1},
		{"m-fault-quota", faultQuota, "quota", 0},
		{"default-model", faultNone, "", 0},
		{"mock-fault-", faultNone, "", 0},
		{"mock-fault-200", faultNone, "", 0},
		{"mock-fault-5000", faultNone, "", 0},
		{"mock-fault-bogus", faultNone, "", 0},
		{"xfault-500-fault-503", faultStatus, "503", 503},
	}
	for _, tc := range cases {
		f, ok := findFault(tc.in)
		if ok != (tc.kind != faultNone) || f.kind != tc.kind || f.spec != tc.spec {
			t.Errorf("findFault(%q) = %+v, %v", tc.in, f, ok)
			continue
		}
		var extra int
		switch f.kind {
		case faultStatus:
			extra = f.status
			if f.status == 429 {
				extra = f.retryAfter
			}
		case faultSlow:
			extra = int(f.delay / time.Millisecond)
		case faultStall, faultReset, faultMalformed, faultMidstream:
			extra = f.after
		}
		if extra != tc.extra {
			t.Errorf("findFault(%q): parameter %d, want %d", tc.in, extra, tc.extra)
		}
	}
}

func TestSchema_ExampleArgs(t *testing.T) {
	t.Parallel()
	cases := []struct{ schema, want string }{
		{``, `{}`},
		{`not json`, `{}`},
		{`{"type":"object"}`, `{}`},
		{`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number"},"c":{"type":"integer"},"d":{"type":"boolean"},"e":{"type":"object"},"f":{"type":"array"},"g":{"type":["null","string"]}},"required":["a","b","c","d","e","f","g"]}`,
			`{"a":"example","b":1,"c":1,"d":true,"e":{},"f":[],"g":"example"}`},
		{`{"properties":{"u":{"type":"string","enum":["c","f"]},"k":{"const":42},"o":{"anyOf":[{"type":"integer"},{"type":"string"}]}},"required":["u","k","o","missing","u"]}`,
			`{"u":"c","k":42,"o":1,"missing":"example"}`},
		{`{"type":"OBJECT","properties":{"n":{"type":"OBJECT","properties":{"x":{"type":"BOOLEAN"}},"required":["x"]}},"required":["n"]}`,
			`{"n":{"x":true}}`},
		{`{"properties":{"q\"uote":{"type":"string"}},"required":["q\"uote"]}`, `{"q\"uote":"example"}`},
	}
	for _, tc := range cases {
		if got := exampleArgs([]byte(tc.schema)); got != tc.want {
			t.Errorf("exampleArgs(%s) = %s, want %s", tc.schema, got, tc.want)
		}
	}
}

func TestReply_SplittingAndSnippets(t *testing.T) {
	t.Parallel()
	if got := strings.Join(splitWords("Hello from m.  You"), "|"); got != "Hello| from| m.|  You" {
		t.Errorf("splitWords = %q", got)
	}
	if got := strings.Join(fragments(`{"k":"ééééé"}`, 4), "|"); got != `{"k"|:"é|éé|éé|"}` {
		t.Errorf("fragments = %q", got)
	}
	if got := snippet("  " + strings.Repeat("ü", 50)); got != strings.Repeat("ü", 40) {
		t.Errorf("snippet = %q", got)
	}
	if text, seq := cutStop("a b c d", []string{"", "d", "c"}); text != "a b " || seq != "c" {
		t.Errorf("cutStop = %q %q", text, seq)
	}
}

func TestPlan_UsageMarkers(t *testing.T) {
	t.Parallel()
	cv := convo{model: "x-cached-cache-write-thinking", textBytes: 400, messages: 1, userText: "hi"}
	rp := cv.plan(false)
	u := rp.usage
	if u.input != 106 || u.cacheRead != 53 || u.cacheWrite != 26 || u.reasoning == 0 || u.output != len(rp.pieces) {
		t.Errorf("usage = %+v", u)
	}
}

// FuzzDecode feeds arbitrary bodies to every endpoint's decoder and, when a
// body is accepted, to its responder (without faults): nothing may panic.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url"}]}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}}]}`,
		`{"model":"m-parallel","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]}`,
		`{"model":"m","input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"r"}],"tools":[{"type":"function","name":"f"}],"stream":true}`,
		`{"model":"m","input":["a","b"],"encoding_format":"base64","dimensions":4}`,
		`{"model":"m-thinking","max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":1024},"stream":true,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto"}}`,
		`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"f","parameters":{"type":"OBJECT","properties":{"x":{"type":"STRING"}},"required":["x"]}}]}],"generationConfig":{"maxOutputTokens":3,"thinkingConfig":{"includeThoughts":true}}}`,
		`{"requests":[{"content":{"parts":[{"text":"a"}]},"outputDimensionality":3}],"content":{"parts":[{"text":"b"}]}}`,
		`[]`, `null`, `""`, `{"model":1}`, `{"messages":{}}`,
	} {
		f.Add([]byte(seed))
	}
	paths := []string{
		"/v1/chat/completions", "/v1/responses", "/v1/embeddings", "/v1/messages", "/v1/messages/count_tokens",
		"/v1beta/models/g:generateContent", "/v1beta/models/g:streamGenerateContent",
		"/v1beta/models/g:streamGenerateContent?alt=sse", "/v1beta/models/g:embedContent",
		"/v1beta/models/g:batchEmbedContents", "/v1beta/models/g:countTokens",
	}
	s := New(Options{Record: -1})
	f.Fuzz(func(t *testing.T, body []byte) {
		findFault(string(body))
		for _, p := range paths {
			c := newCall()
			c.s = s
			c.w = httptest.NewRecorder()
			c.r = httptest.NewRequest(http.MethodPost, p, nil)
			c.ctx = context.Background()
			c.route()
			c.decode(body)
			if c.derr == nil {
				c.respond()
			} else {
				c.fail(c.derr)
			}
		}
	})
}
