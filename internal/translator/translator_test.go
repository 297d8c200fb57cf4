package translator

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/routing"
	"github.com/relay-llm/relay/internal/wire"
)

// Golden tests. Each case is a directory testdata/golden/<pair>/<case>:
//
//	request.json            the caller's body
//	case.json               optional: upstream model, mock fault, catalog max output
//	upstream_request.golden the body Relay sends upstream (or the 400 it answers)
//	upstream.status         the upstream's status (absent: 200)
//	upstream.body           the upstream's answer, recorded (JSON or SSE)
//	response.golden         what the caller receives
//	usage.golden            the usage Relay records
//
// go test -run Golden -record fills missing upstream answers from the mock
// upstream (real Anthropic answers come from the cassettes instead);
// -update rewrites the golden files. Streams are also fed one byte at a
// time and split at every byte boundary: the caller's bytes must not
// change.

var (
	update = flag.Bool("update", false, "rewrite golden files")
	record = flag.Bool("record", false, "record missing upstream answers from the mock upstream")
)

var testNow = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

type caseMeta struct {
	UpstreamModel   string `json:"upstream_model"`
	Fault           string `json:"fault"`
	MaxOutputTokens int64  `json:"max_output_tokens"`
}

var (
	mockOnce sync.Once
	mockURL  string
)

func mockServer() string {
	mockOnce.Do(func() {
		srv := httptest.NewServer(mockupstream.New(mockupstream.Options{Record: -1}))
		mockURL = srv.URL // lives for the test binary
	})
	return mockURL
}

// pairByDir maps a testdata directory name (chat_anthropic) to its pair.
func pairByDir(dir string) *pairSpec {
	for _, p := range pairs {
		if strings.ReplaceAll(p.name, "→", "_") == dir {
			return p
		}
	}
	return nil
}

func runGolden(t *testing.T, dir string) {
	t.Helper()
	p := pairByDir(dir)
	if p == nil {
		t.Fatalf("no pair %s", dir)
	}
	cases, err := filepath.Glob(filepath.Join("testdata", "golden", dir, "*"))
	if err != nil || len(cases) == 0 {
		t.Fatalf("no golden cases for %s: %v", dir, err)
	}
	for _, c := range cases {
		t.Run(filepath.Base(c), func(t *testing.T) {
			t.Parallel()
			runCase(t, p, c)
		})
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// golden compares got with the file, or rewrites it under -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func indentJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

// errorText renders a request-side error as the caller would see it.
func errorText(in wire.Inbound, err error) []byte {
	body, status := wire.AppendErrorBody(nil, in.Dialect(), err, "req_test")
	return append([]byte("HTTP "+strconv.Itoa(status)+"\n"), body...)
}

func testTarget(p *pairSpec, meta caseMeta) Target {
	t := Target{Shape: p.up, Model: "test-model", UpstreamModel: meta.UpstreamModel, Host: "test-host", MaxOutputTokens: meta.MaxOutputTokens}
	if t.UpstreamModel == "" {
		t.UpstreamModel = "up-model"
	}
	return t
}

func runCase(t *testing.T, p *pairSpec, dir string) {
	body := readFile(t, filepath.Join(dir, "request.json"))
	var meta caseMeta
	if b, err := os.ReadFile(filepath.Join(dir, "case.json")); err == nil {
		if err := json.Unmarshal(b, &meta); err != nil {
			t.Fatal(err)
		}
	}
	req, err := Decode(p.in, body)
	if err != nil {
		golden(t, filepath.Join(dir, "upstream_request.golden"), errorText(p.in, err))
		return
	}
	tr, err := New(req, testTarget(p, meta), testNow)
	if err != nil {
		t.Fatal(err)
	}
	up, err := tr.AppendRequest(nil)
	if err != nil {
		golden(t, filepath.Join(dir, "upstream_request.golden"), errorText(p.in, err))
		return
	}
	golden(t, filepath.Join(dir, "upstream_request.golden"), append([]byte("POST "+tr.Path()+"\n"), indentJSON(t, up)...))

	status, answer := upstreamAnswer(t, dir, tr, up, meta)
	out, usage := translateAnswer(t, p, req, meta, status, answer)
	golden(t, filepath.Join(dir, "response.golden"), out)
	u, _ := json.Marshal(usage)
	golden(t, filepath.Join(dir, "usage.golden"), append(u, '\n'))

	if status == http.StatusOK && isSSE(answer) && req.C.Stream {
		checkSplits(t, p, req, meta, answer, out)
	}
	validateCaller(t, p.in, req.C.Stream, status, out)
}

func isSSE(b []byte) bool {
	b = bytes.TrimSpace(b)
	return bytes.HasPrefix(b, []byte("event:")) || bytes.HasPrefix(b, []byte("data:"))
}

// upstreamAnswer reads the recorded answer, recording it from the mock
// first under -record.
func upstreamAnswer(t *testing.T, dir string, tr *Translator, up []byte, meta caseMeta) (int, []byte) {
	t.Helper()
	bodyPath := filepath.Join(dir, "upstream.body")
	statusPath := filepath.Join(dir, "upstream.status")
	if _, err := os.Stat(bodyPath); errors.Is(err, os.ErrNotExist) && *record {
		req, err := http.NewRequest(http.MethodPost, wire.JoinURL(mockServer(), tr.Path()), bytes.NewReader(up))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		switch tr.target.Shape {
		case wire.ShapeAnthropic:
			req.Header.Set("X-Api-Key", "sk-test")
			req.Header.Set("Anthropic-Version", "2023-06-01")
		case wire.ShapeGemini:
			req.Header.Set("X-Goog-Api-Key", "sk-test")
		default:
			req.Header.Set("Authorization", "Bearer sk-test")
		}
		if meta.Fault != "" {
			req.Header.Set("X-Mock-Fault", meta.Fault)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := os.WriteFile(bodyPath, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			if err := os.WriteFile(statusPath, []byte(strconv.Itoa(resp.StatusCode)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	answer := readFile(t, bodyPath)
	status := http.StatusOK
	if b, err := os.ReadFile(statusPath); err == nil {
		status, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	return status, answer
}

// translateAnswer runs an upstream answer through a fresh translator the
// way the proxy does, reading the stream through r.
func translateAnswer(t *testing.T, p *pairSpec, req *Request, meta caseMeta, status int, answer []byte) ([]byte, wire.Usage) {
	t.Helper()
	return translateFrom(t, p, req, meta, status, answer, bytes.NewReader(answer))
}

func translateFrom(t *testing.T, p *pairSpec, req *Request, meta caseMeta, status int, answer []byte, r io.Reader) ([]byte, wire.Usage) {
	t.Helper()
	tr, err := New(req, testTarget(p, meta), testNow)
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusOK {
		out, st := tr.AppendError(nil, status, answer, "req_test")
		return append([]byte("HTTP "+strconv.Itoa(st)+"\n"), out...), tr.Usage()
	}
	if !isSSE(answer) {
		out, err := tr.AppendResponse(nil, answer)
		if err != nil {
			return errorText(p.in, err), tr.Usage()
		}
		return out, tr.Usage()
	}
	er := wire.NewEventReader(r, nil, 1<<20)
	var out []byte
	var rerr error
	for !tr.Done() {
		ev, err := er.Next()
		if err != nil {
			rerr = err
			break
		}
		out, _ = tr.AppendEvent(out, ev)
	}
	if !tr.Done() {
		var ok bool
		if rerr == io.EOF {
			out, ok = tr.AppendEnd(out)
		}
		if !ok {
			out = tr.AppendBroken(out, "The upstream stream broke: stream ended early.")
		}
	}
	if !req.C.Stream {
		body, st := tr.AppendCollected(nil, "req_test")
		return append([]byte("HTTP "+strconv.Itoa(st)+"\n"), body...), tr.Usage()
	}
	return out, tr.Usage()
}

// checkSplits feeds the stream one byte at a time, and split in two at
// every byte boundary: the caller's bytes must be the same. At every split
// point the SSE reader must yield the very events it yields unsplit — the
// translator sees nothing else, so its output is then the same; the whole
// translation is also rerun for the one-byte reader, at every event
// boundary and at evenly spaced split points.
func checkSplits(t *testing.T, p *pairSpec, req *Request, meta caseMeta, answer, want []byte) {
	t.Helper()
	got, _ := translateFrom(t, p, req, meta, http.StatusOK, answer, iotest.OneByteReader(bytes.NewReader(answer)))
	if !bytes.Equal(got, want) {
		t.Fatalf("one byte at a time:\n%s\nwant\n%s", got, want)
	}
	events := readEvents(bytes.NewReader(answer))
	boundaries := map[int]bool{}
	at := 0
	for _, ev := range events {
		at += len(ev[0])
		boundaries[at] = true
	}
	step := max(1, len(answer)/64)
	for i := 1; i < len(answer); i++ {
		split := func() io.Reader { return &splitReader{parts: [][]byte{answer[:i], answer[i:]}} }
		if evs := readEvents(split()); !equalEvents(evs, events) {
			t.Fatalf("split at %d: the reader yields other events", i)
		}
		if i%step != 0 && !boundaries[i] && !boundaries[i-1] && !boundaries[i+1] {
			continue
		}
		if got, _ := translateFrom(t, p, req, meta, http.StatusOK, answer, split()); !bytes.Equal(got, want) {
			t.Fatalf("split at %d:\n%s\nwant\n%s", i, got, want)
		}
	}
}

// readEvents reads every event: raw bytes, name and data, copied.
func readEvents(r io.Reader) [][3]string {
	er := wire.NewEventReader(r, nil, 1<<20)
	var evs [][3]string
	for {
		ev, err := er.Next()
		if err != nil {
			return evs
		}
		evs = append(evs, [3]string{string(ev.Raw), string(ev.Name), string(ev.Data)})
	}
}

func equalEvents(a, b [][3]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// splitReader returns its parts one read each.
type splitReader struct{ parts [][]byte }

func (s *splitReader) Read(p []byte) (int, error) {
	for len(s.parts) > 0 && len(s.parts[0]) == 0 {
		s.parts = s.parts[1:]
	}
	if len(s.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.parts[0])
	s.parts[0] = s.parts[0][n:]
	return n, nil
}

// --- API behaviour ---

func TestSupports_IsTheRegistry(t *testing.T) {
	t.Parallel()
	shapes := []wire.Shape{wire.ShapeOpenAI, wire.ShapeOpenAIResponses, wire.ShapeAnthropic, wire.ShapeGemini}
	ins := []wire.Inbound{wire.InboundChat, wire.InboundEmbeddings, wire.InboundResponses, wire.InboundMessages, wire.InboundGenerate}
	for _, in := range ins {
		for _, up := range shapes {
			want := Native(in, up) || (in == wire.InboundChat || in == wire.InboundMessages) && up != wire.ShapeOpenAI || in == wire.InboundMessages ||
				in == wire.InboundResponses || in == wire.InboundEmbeddings && up == wire.ShapeGemini || in == wire.InboundGenerate
			if got := Supports(in, up); got != want {
				t.Errorf("Supports(%s, %s) = %v, want %v", in, up, got, want)
			}
			if Native(in, up) {
				continue
			}
			_, err := New(&Request{In: in}, Target{Shape: up}, testNow)
			if got := err == nil; got != Supports(in, up) {
				t.Errorf("New(%s, %s): %v", in, up, err)
			}
			if err != nil && !errors.Is(err, ErrUnknownPair) {
				t.Errorf("New(%s, %s): %v, want ErrUnknownPair", in, up, err)
			}
		}
	}
	if _, err := Decode(wire.InboundNone, []byte(`{}`)); !errors.Is(err, ErrUnknownPair) {
		t.Errorf("Decode(none) = %v", err)
	}
}

func TestTranslator_OneDecodeServesEveryBinding(t *testing.T) {
	t.Parallel()
	req, err := Decode(wire.InboundChat, []byte(`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"},{"role":"system","content":"late"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := json.Marshal(&req.C)
	for _, up := range []wire.Shape{wire.ShapeAnthropic, wire.ShapeGemini, wire.ShapeOpenAIResponses} {
		tr, err := New(req, Target{Shape: up, UpstreamModel: "u"}, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.AppendRequest(nil); err != nil {
			t.Fatalf("%s: %v", up, err)
		}
	}
	if after, _ := json.Marshal(&req.C); !bytes.Equal(before, after) {
		t.Errorf("encoding changed the shared request:\n%s\n%s", before, after)
	}
}

func TestTranslator_GarbageAnswers(t *testing.T) {
	t.Parallel()
	for _, p := range pairs {
		req := minimalRequest(t, p.in, false)
		tr, _ := New(req, Target{Shape: p.up, UpstreamModel: "u"}, testNow)
		_, err := tr.AppendResponse(nil, []byte(`<html>oops</html>`))
		var we *wire.Error
		if !errors.As(err, &we) || !errors.Is(err, wire.ErrUpstream) {
			t.Errorf("%s: garbage body: %v", p.name, err)
		}
		sreq := minimalRequest(t, p.in, true)
		tr, _ = New(sreq, Target{Shape: p.up, UpstreamModel: "u"}, testNow)
		out, err := tr.AppendEvent(nil, wire.Event{Data: []byte(`{"broken`)})
		if err == nil || !tr.Done() || !tr.Errored() || len(out) == 0 {
			t.Errorf("%s: garbage event: err %v, out %q", p.name, err, out)
		}
		validateCaller(t, p.in, true, 200, out)
	}
}

func minimalRequest(t *testing.T, in wire.Inbound, stream bool) *Request {
	t.Helper()
	if in == wire.InboundGemini {
		req, err := Decode(in, []byte(`{"contents":[{"parts":[{"text":"hi"}]}]}`))
		if err != nil {
			t.Fatal(err)
		}
		req.FromPath("m", stream)
		return req
	}
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]`
	if in == wire.InboundResponses {
		body = `{"model":"m","input":"hi"`
	}
	if in == wire.InboundMessages {
		body += `,"max_tokens":64`
	}
	if stream {
		body += `,"stream":true`
	}
	req, err := Decode(in, []byte(body+"}"))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// Native is routing's same-shape rule: the pairs that pass through.
func TestNative_IsRoutingSameShape(t *testing.T) {
	t.Parallel()
	for _, in := range []wire.Inbound{wire.InboundNone, wire.InboundChat, wire.InboundEmbeddings, wire.InboundResponses, wire.InboundMessages} {
		for _, up := range []wire.Shape{wire.ShapeOpenAI, wire.ShapeOpenAIResponses, wire.ShapeAnthropic, wire.ShapeGemini, "other"} {
			if Native(in, up) != routing.SameShape(in, up) {
				t.Errorf("%s/%s: Native %v, SameShape %v", in, up, Native(in, up), routing.SameShape(in, up))
			}
		}
	}
}
