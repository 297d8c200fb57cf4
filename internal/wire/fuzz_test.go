package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// FuzzScanDifferential holds the request scan to encoding/json (see
// checkScanDifferential). Its adversarial seeds are in
// testdata/fuzz/FuzzScanDifferential; plain go test runs them.
func FuzzScanDifferential(f *testing.F) {
	for _, s := range []string{
		`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","stream":true,"stream_options":{"include_usage":false}}`,
		`{"model":"m","x":[1,-2.5e+3,true,false,null,{"y":"\\"}]}`,
		`[]`, `null`, ` null `, `{"model":}`, `{"model":"m"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkScanDifferential(t, body)
	})
}

// FuzzEventReader checks that events put back together give the input, at
// any read size, and that tracking usage over them never panics.
func FuzzEventReader(f *testing.F) {
	f.Add([]byte(chatStream), uint8(3))
	f.Add([]byte(anthropicStream), uint8(1))
	f.Add([]byte(responsesStream), uint8(7))
	f.Add([]byte("data: a\r\rdata:b\r\n\r\n: x\n\nevent: e\n"), uint8(2))
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		var r io.Reader = bytes.NewReader(in)
		if chunk%2 == 1 {
			r = iotest.OneByteReader(r)
		} else {
			r = iotest.HalfReader(r)
		}
		er := NewEventReader(r, make([]byte, 0, int(chunk)+1), 1<<20)
		trackers := []StreamTracker{
			NewStreamTracker(ShapeOpenAI), NewStreamTracker(ShapeAnthropic),
			NewStreamTracker(ShapeOpenAIResponses), NewStreamTracker(ShapeGemini),
		}
		var raw []byte
		for {
			ev, err := er.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			raw = append(raw, ev.Raw...)
			for i := range trackers {
				trackers[i].Observe(ev)
			}
		}
		if !bytes.Equal(raw, in) {
			t.Fatalf("raw %q, want %q", raw, in)
		}
	})
}

// FuzzBodyUsage checks the streaming capture against Get on whole bodies,
// whatever the split.
func FuzzBodyUsage(f *testing.F) {
	f.Add([]byte(`{"id":"x","usage":{"prompt_tokens":1}}`), uint16(5))
	f.Add([]byte(`{"usage":"s\"}","b":[{"usage":1}]}`), uint16(9))
	f.Add([]byte(`{"a":{"usage":{}},"usage":[1,2]}`), uint16(0))
	f.Fuzz(func(t *testing.T, body []byte, split uint16) {
		c := NewBodyUsage(1 << 20)
		i := int(split) % (len(body) + 1)
		_, _ = c.Write(body[:i])
		_, _ = c.Write(body[i:])
		got, _ := c.Value()
		for _, shape := range []Shape{ShapeOpenAI, ShapeAnthropic, ShapeOpenAIResponses} {
			_ = ParseUsage(shape, got)
		}
		if _, err := ScanRequest(body); err != nil && !errors.Is(err, ErrMissingModel) {
			return // only valid objects have a defined answer
		}
		want, ok := Get(body, "usage")
		if !ok || len(want) == 0 || (want[0] != '{' && want[0] != '[' && want[0] != '"') {
			// Scalars are captured without their surrounding whitespace only.
			want = bytes.TrimSpace(want)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%q: got %q, want %q", body, got, want)
		}
	})
}
