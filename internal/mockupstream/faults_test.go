package mockupstream_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

	"github.com/relay-llm/relay/internal/mockupstream"
)

// endpoint describes how to call one shape with a given model and how to read
// the error type out of its error body.
type endpoint struct {
	name    string
	path    func(model string) string
	header  map[string]string
	body    func(model string, stream bool) string
	errType func(t *testing.T, body []byte) string
}

func endpoints() []endpoint {
	openAIType := func(t *testing.T, b []byte) string {
		var e struct {
			Error struct {
				Type string  `json:"type"`
				Code *string `json:"code"`
			} `json:"error"`
		}
		decodeJSON(t, b, &e)
		if e.Error.Code != nil {
			return e.Error.Type + "/" + *e.Error.Code
		}
		return e.Error.Type
	}
	return []endpoint{
		{
			name:   "chat",
			path:   func(string) string { return "/v1/chat/completions" },
			header: openAIHeaders,
			body: func(m string, s bool) string {
				return `{"model":"` + m + `","stream":` + boolStr(s) + `,"messages":[{"role":"user","content":"hi"}]}`
			},
			errType: openAIType,
		},
		{
			name:   "responses",
			path:   func(string) string { return "/v1/responses" },
			header: openAIHeaders,
			body: func(m string, s bool) string {
				return `{"model":"` + m + `","stream":` + boolStr(s) + `,"input":"hi"}`
			},
			errType: openAIType,
		},
		{
			name:   "anthropic",
			path:   func(string) string { return "/v1/messages" },
			header: anthropicHeaders,
			body: func(m string, s bool) string {
				return `{"model":"` + m + `","max_tokens":100,"stream":` + boolStr(s) + `,"messages":[{"role":"user","content":"hi"}]}`
			},
			errType: func(t *testing.T, b []byte) string {
				var e struct {
					Type  string `json:"type"`
					Error struct {
						Type string `json:"type"`
					} `json:"error"`
					RequestID string `json:"request_id"`
				}
				decodeJSON(t, b, &e)
				if e.Type != "error" || !strings.HasPrefix(e.RequestID, "req_") {
					t.Errorf("anthropic error envelope = %s", b)
				}
				return e.Error.Type
			},
		},
		{
			name: "gemini",
			path: func(m string) string {
				return "/v1beta/models/" + m + ":generateContent"
			},
			header: geminiHeaders,
			body: func(string, bool) string {
				return `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
			},
			errType: func(t *testing.T, b []byte) string {
				var e struct {
					Error struct {
						Code   int    `json:"code"`
						Status string `json:"status"`
					} `json:"error"`
				}
				decodeJSON(t, b, &e)
				return e.Error.Status
			},
		},
	}
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func TestFaults_StatusPerShape(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	type want struct {
		status                         int
		chat, anthropic, gemini, retry string
	}
	cases := map[string]want{
		"500":   {500, "server_error", "api_error", "INTERNAL", ""},
		"503":   {503, "server_error", "api_error", "UNAVAILABLE", ""},
		"529":   {529, "server_error", "overloaded_error", "UNAVAILABLE", ""},
		"429":   {429, "requests/rate_limit_exceeded", "rate_limit_error", "RESOURCE_EXHAUSTED", "1"},
		"429-7": {429, "requests/rate_limit_exceeded", "rate_limit_error", "RESOURCE_EXHAUSTED", "7"},
		"401":   {401, "invalid_request_error/invalid_api_key", "authentication_error", "UNAUTHENTICATED", ""},
		"400":   {400, "invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT", ""},
		"404":   {404, "invalid_request_error/model_not_found", "not_found_error", "NOT_FOUND", ""},
		"quota": {429, "insufficient_quota/insufficient_quota", "invalid_request_error", "RESOURCE_EXHAUSTED", ""},
	}
	for spec, w := range cases {
		for _, ep := range endpoints() {
			model := "mock-fault-" + spec
			resp, raw := post(t, b.srv.URL+ep.path(model), ep.header, ep.body(model, false))
			status := w.status
			if spec == "quota" && ep.name == "anthropic" {
				status = 400 // Anthropic reports an empty balance as a 400
			}
			equal(t, ep.name+" "+spec+": status", resp.StatusCode, status)
			wantType := map[string]string{"chat": w.chat, "responses": w.chat, "anthropic": w.anthropic, "gemini": w.gemini}[ep.name]
			equal(t, ep.name+" "+spec+": error type", ep.errType(t, raw), wantType)
			equal(t, ep.name+" "+spec+": Retry-After", resp.Header.Get("Retry-After"), w.retry)
		}
	}
	for _, r := range b.mock.Requests() {
		if r.Fault == "" || !strings.HasSuffix(r.Model, r.Fault) {
			t.Errorf("record %s %s: fault %q", r.Path, r.Model, r.Fault)
		}
	}
}

func TestFaults_Sources(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	chat := endpoints()[0]
	cases := []struct {
		name   string
		header map[string]string
		model  string
		status int
		fault  string
	}{
		{"model", openAIHeaders, "mock-fault-500", 500, "500"},
		{"credential", map[string]string{"Authorization": "Bearer sk-mock-fault-503"}, "gpt", 503, "503"},
		{"header", map[string]string{"Authorization": "Bearer sk-mock-fault-503", "X-Mock-Fault": "429-3"}, "mock-fault-500", 429, "429-3"},
		{"header with prefix", map[string]string{"Authorization": "Bearer k", "X-Mock-Fault": "fault-401"}, "gpt", 401, "401"},
		{"not a token", openAIHeaders, "default-model", 200, ""},
		{"unknown spec", openAIHeaders, "mock-fault-nonsense", 200, ""},
	}
	for _, tc := range cases {
		b.mock.Reset()
		resp, _ := post(t, b.srv.URL+chat.path(tc.model), tc.header, chat.body(tc.model, false))
		equal(t, tc.name+": status", resp.StatusCode, tc.status)
		equal(t, tc.name+": recorded fault", only(t, b.mock).Fault, tc.fault)
	}
}

func TestFaults_SDKErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	oc := openAIClient(b, "sk-test")
	_, err := oc.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
		Model:    "gpt-fault-429",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var oe *openai.Error
	if !errors.As(err, &oe) {
		t.Fatalf("err = %v", err)
	}
	equal(t, "openai status", oe.StatusCode, 429)
	equal(t, "openai code", oe.Code, "rate_limit_exceeded")

	ac := anthropicClient(b, "sk-ant-test")
	_, err = ac.Messages.New(ctx(t), anthropic.MessageNewParams{
		Model: "claude-fault-529", MaxTokens: 10,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	var ae *anthropic.Error
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v", err)
	}
	equal(t, "anthropic status", ae.StatusCode, 529)
	equal(t, "anthropic type", string(ae.Type()), "overloaded_error")
	hasPrefix(t, "anthropic request id", ae.RequestID, "req_")
}

func TestFaults_Slow(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	start := time.Now()
	resp, _ := post(t, b.srv.URL+"/v1/chat/completions", map[string]string{"Authorization": "Bearer k", "X-Mock-Fault": "slow-60"},
		`{"model":"gpt","messages":[{"role":"user","content":"hi"}]}`)
	equal(t, "status", resp.StatusCode, 200)
	if d := time.Since(start); d < 60*time.Millisecond {
		t.Errorf("answered after %v, want ≥ 60ms", d)
	}
	equal(t, "fault", only(t, b.mock).Fault, "slow-60")
}

// readEvents reads n SSE events (blank-line terminated) from r.
func readEvents(t *testing.T, r *bufio.Reader, n int) {
	t.Helper()
	for seen := 0; seen < n; {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("after %d events: %v", seen, err)
		}
		if line == "\n" {
			seen++
		}
	}
}

func TestFaults_StallUntilClientLeaves(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	for _, ep := range endpoints() {
		if ep.name == "gemini" {
			ep.path = func(m string) string { return "/v1beta/models/" + m + ":streamGenerateContent?alt=sse" }
		}
		model := "mock-fault-stall-2"
		reqCtx, cancel := context.WithCancel(ctx(t))
		req, _ := http.NewRequestWithContext(reqCtx, http.MethodPost, b.srv.URL+ep.path(model), strings.NewReader(ep.body(model, true)))
		for k, v := range ep.header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, ep.name+": status", resp.StatusCode, 200)
		readEvents(t, bufio.NewReader(resp.Body), 2)
		cancel()
		resp.Body.Close()
		rec, err := b.mock.WaitFor(ctx(t), func(r mockupstream.Request) bool {
			return r.Canceled && strings.HasPrefix(r.Path, strings.Split(ep.path(model), "?")[0])
		})
		if err != nil {
			t.Fatalf("%s: %v", ep.name, err)
		}
		equal(t, ep.name+": fault", rec.Fault, "stall-2")
		equal(t, ep.name+": recorded status", rec.Status, 200)
		if rec.CanceledAt.Before(rec.ReceivedAt) || rec.FinishedAt.Before(rec.CanceledAt) {
			t.Errorf("%s: times received %v canceled %v finished %v", ep.name, rec.ReceivedAt, rec.CanceledAt, rec.FinishedAt)
		}
	}
}

func TestFaults_StallBeforeFirstByte(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	reqCtx, cancel := context.WithTimeout(ctx(t), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(reqCtx, http.MethodPost, b.srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-fault-stall-0","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("got a response from a stall-0 fault")
	}
	rec, err := b.mock.WaitFor(ctx(t), func(r mockupstream.Request) bool { return r.Canceled })
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "status", rec.Status, 0)
}

func TestFaults_Reset(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	client := openAIClient(b, "sk-test")
	stream := client.Chat.Completions.NewStreaming(ctx(t), openai.ChatCompletionNewParams{
		Model:    "gpt-fault-reset-3",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	chunks := 0
	for stream.Next() {
		chunks++
	}
	if stream.Err() == nil {
		t.Error("reset stream ended without an error")
	}
	equal(t, "chunks before reset", chunks, 3)

	_, err := client.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
		Model:    "gpt-fault-reset",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var oe *openai.Error
	if err == nil || errors.As(err, &oe) {
		t.Errorf("half a body then reset: err = %v", err)
	}

	_, err = client.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
		Model:    "gpt-fault-reset-0",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err == nil || errors.As(err, &oe) {
		t.Errorf("reset before any byte: err = %v", err)
	}
	for _, r := range b.mock.Requests() {
		if !r.Finished() || r.Canceled {
			t.Errorf("%s: record %+v", r.Model, r)
		}
	}
	reqs := b.mock.Requests()
	equal(t, "reset-0 status", reqs[2].Status, 0)
	equal(t, "reset-3 status", reqs[0].Status, 200)
}

func TestFaults_Malformed(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	for _, ep := range endpoints() {
		resp, raw := post(t, b.srv.URL+ep.path("m-fault-malformed"), ep.header, ep.body("m-fault-malformed", false))
		equal(t, ep.name+": status", resp.StatusCode, 200)
		if json.Valid(raw) {
			t.Errorf("%s: malformed body is valid JSON: %s", ep.name, raw)
		}
	}
	ac := anthropicClient(b, "k")
	stream := ac.Messages.NewStreaming(ctx(t), anthropic.MessageNewParams{
		Model: "claude-fault-malformed-2", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	for stream.Next() {
	}
	if stream.Err() == nil {
		t.Error("malformed stream decoded without error")
	}
}

func TestFaults_Midstream(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	oc := openAIClient(b, "k")
	stream := oc.Chat.Completions.NewStreaming(ctx(t), openai.ChatCompletionNewParams{
		Model:    "gpt-fault-midstream-2",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	chunks := 0
	for stream.Next() {
		chunks++
	}
	equal(t, "chat chunks", chunks, 2)
	if err := stream.Err(); err == nil || !strings.Contains(err.Error(), "overloaded") {
		t.Errorf("chat midstream err = %v", err)
	}

	ac := anthropicClient(b, "k")
	astream := ac.Messages.NewStreaming(ctx(t), anthropic.MessageNewParams{
		Model: "claude-fault-midstream", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	for astream.Next() {
	}
	if err := astream.Err(); err == nil || !strings.Contains(err.Error(), "overloaded_error") {
		t.Errorf("anthropic midstream err = %v", err)
	}

	// Responses: an error event; Gemini: a data chunk holding {"error"}.
	for _, tc := range []struct{ path, body, want string }{
		{"/v1/responses", `{"model":"m-fault-midstream-1","stream":true,"input":"hi"}`, `"type":"error"`},
		{"/v1beta/models/m-fault-midstream-1:streamGenerateContent?alt=sse", `{"contents":[{"parts":[{"text":"hi"}]}]}`, `"status":"UNAVAILABLE"`},
	} {
		h := openAIHeaders
		if strings.Contains(tc.path, "v1beta") {
			h = geminiHeaders
		}
		_, raw := post(t, b.srv.URL+tc.path, h, tc.body)
		events := readSSE(t, strings.NewReader(string(raw)))
		equal(t, tc.path+": events", len(events), 2)
		if last := events[len(events)-1]; !strings.Contains(last.data, tc.want) {
			t.Errorf("%s: last event %+v lacks %s", tc.path, last, tc.want)
		}
	}

	resp, _ := post(t, b.srv.URL+"/v1/chat/completions", openAIHeaders, `{"model":"m-fault-midstream","messages":[{"role":"user","content":"hi"}]}`)
	equal(t, "non-stream midstream", resp.StatusCode, 500)
}

func TestServer_Auth(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{Keys: []string{"good-key-123456"}})
	chat := `{"model":"gpt","messages":[{"role":"user","content":"hi"}]}`
	msgs := `{"model":"claude","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	gem := `{"contents":[{"parts":[{"text":"hi"}]}]}`
	cases := []struct {
		name, path string
		header     map[string]string
		body       string
		status     int
		contains   string
	}{
		{"openai missing", "/v1/chat/completions", nil, chat, 401, `"code":"invalid_api_key"`},
		{"openai wrong", "/v1/chat/completions", map[string]string{"Authorization": "Bearer bad-key-999999"}, chat, 401, `"code":"invalid_api_key"`},
		{"openai good", "/v1/chat/completions", map[string]string{"Authorization": "Bearer good-key-123456"}, chat, 200, `"chat.completion"`},
		{"anthropic missing", "/v1/messages", map[string]string{"anthropic-version": "2023-06-01"}, msgs, 401, `"authentication_error"`},
		{"anthropic wrong", "/v1/messages", map[string]string{"x-api-key": "bad", "anthropic-version": "2023-06-01"}, msgs, 401, `"invalid x-api-key"`},
		{"anthropic x-api-key", "/v1/messages", map[string]string{"x-api-key": "good-key-123456", "anthropic-version": "2023-06-01"}, msgs, 200, `"message"`},
		{"anthropic bearer", "/v1/messages", map[string]string{"Authorization": "Bearer good-key-123456", "anthropic-version": "2023-06-01"}, msgs, 200, `"message"`},
		{"gemini missing", "/v1beta/models/g:generateContent", nil, gem, 403, `"PERMISSION_DENIED"`},
		{"gemini wrong", "/v1beta/models/g:generateContent", map[string]string{"x-goog-api-key": "bad"}, gem, 400, `"API_KEY_INVALID"`},
		{"gemini query key", "/v1beta/models/g:generateContent?key=good-key-123456", nil, gem, 200, `"candidates"`},
		{"unknown route", "/v1/nothing", map[string]string{"Authorization": "Bearer good-key-123456"}, chat, 404, `Invalid URL (POST /v1/nothing)`},
	}
	for _, tc := range cases {
		resp, raw := post(t, b.srv.URL+tc.path, tc.header, tc.body)
		equal(t, tc.name+": status", resp.StatusCode, tc.status)
		if !strings.Contains(string(raw), tc.contains) {
			t.Errorf("%s: body %s lacks %s", tc.name, raw, tc.contains)
		}
		if strings.Contains(string(raw), "bad-key-999999") {
			t.Errorf("%s: error echoes the key: %s", tc.name, raw)
		}
	}
}

func TestServer_CancelRecorded(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{ChunkDelay: 20 * time.Millisecond})
	reqCtx, cancel := context.WithCancel(ctx(t))
	defer cancel()
	ac := anthropicClient(b, "k")
	stream := ac.Messages.NewStreaming(reqCtx, anthropic.MessageNewParams{
		Model: "claude-test", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("a long enough prompt to stream for a while"))},
	})
	if !stream.Next() {
		t.Fatalf("no first event: %v", stream.Err())
	}
	cancel()
	for stream.Next() {
	}
	stream.Close()
	rec, err := b.mock.WaitFor(ctx(t), func(r mockupstream.Request) bool { return r.Model == "claude-test" })
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Canceled || rec.CanceledAt.IsZero() {
		t.Fatalf("record = %+v, want canceled", rec)
	}
	equal(t, "status", rec.Status, 200)
	if rec.CanceledAt.Before(rec.ReceivedAt) {
		t.Errorf("canceled %v before received %v", rec.CanceledAt, rec.ReceivedAt)
	}
}

func TestServer_Latency(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{Latency: 40 * time.Millisecond})
	start := time.Now()
	resp, _ := post(t, b.srv.URL+"/v1/chat/completions", nil, `{}`)
	equal(t, "status", resp.StatusCode, 401)
	if d := time.Since(start); d < 40*time.Millisecond {
		t.Errorf("first byte after %v, want ≥ 40ms", d)
	}
}

func TestServer_Recording(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{Record: 2})
	for _, m := range []string{"a", "b", "c"} {
		post(t, b.srv.URL+"/v1/chat/completions", openAIHeaders, `{"model":"`+m+`","messages":[{"role":"user","content":"hi"}]}`)
	}
	reqs := b.mock.Requests()
	if len(reqs) != 2 || reqs[0].Model != "b" || reqs[1].Model != "c" {
		t.Fatalf("kept %+v", reqs)
	}
	if _, err := b.mock.WaitFor(ctx(t), func(r mockupstream.Request) bool { return r.Model == "c" }); err != nil {
		t.Fatal(err)
	}
	b.mock.Reset()
	equal(t, "after reset", len(b.mock.Requests()), 0)
	short, cancel := context.WithTimeout(ctx(t), 10*time.Millisecond)
	defer cancel()
	if _, err := b.mock.WaitFor(short, func(r mockupstream.Request) bool { return true }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitFor on an empty record: %v", err)
	}

	off := setup(t, mockupstream.Options{Record: -1})
	post(t, off.srv.URL+"/v1/chat/completions", openAIHeaders, `{"model":"x","messages":[{"role":"user","content":"hi"}]}`)
	equal(t, "recording off", len(off.mock.Requests()), 0)
	if _, err := off.mock.WaitFor(ctx(t), func(mockupstream.Request) bool { return true }); !errors.Is(err, mockupstream.ErrNotRecording) {
		t.Errorf("WaitFor with recording off: %v", err)
	}
}

func TestModels_Listings(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	get := func(path string, h map[string]string) []byte {
		req, _ := http.NewRequestWithContext(ctx(t), http.MethodGet, b.srv.URL+path, nil)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		equal(t, path+" status", resp.StatusCode, 200)
		raw, _ := io.ReadAll(resp.Body)
		return raw
	}
	if raw := get("/v1/models", anthropicHeaders); !strings.Contains(string(raw), `"has_more":false`) {
		t.Errorf("anthropic listing = %s", raw)
	}
	if raw := get("/v1beta/models", geminiHeaders); !strings.Contains(string(raw), `"models/gemini-2.5-flash"`) {
		t.Errorf("gemini listing = %s", raw)
	}
	if raw := get("/v1/models/gpt-x", openAIHeaders); compactJSON(t, string(raw)) != `{"id":"gpt-x","object":"model","created":1715367049,"owned_by":"system"}` {
		t.Errorf("openai model = %s", raw)
	}
	if raw := get("/v1/models/claude-x", anthropicHeaders); !strings.Contains(string(raw), `"id":"claude-x"`) {
		t.Errorf("anthropic model = %s", raw)
	}
	if raw := get("/v1beta/models/gemini-x", geminiHeaders); !strings.Contains(string(raw), `"name":"models/gemini-x"`) {
		t.Errorf("gemini model = %s", raw)
	}
}

func TestServer_Serve(t *testing.T) {
	t.Parallel()
	m := mockupstream.New(mockupstream.Options{})
	sctx, stop := context.WithCancel(t.Context())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- m.Serve(sctx, "127.0.0.1:0", func(a net.Addr) { addrc <- a.String() })
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatal(err)
	}
	resp, _ := post(t, "http://"+addr+"/v1/chat/completions", openAIHeaders, `{"model":"x","messages":[{"role":"user","content":"hi"}]}`)
	equal(t, "status", resp.StatusCode, 200)
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-ctx(t).Done():
		t.Fatal("Serve did not return after its context ended")
	}
}
