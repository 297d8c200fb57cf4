package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type sseCase struct {
	name  string
	in    string
	names []string
	datas []string
}

var sseCases = []sseCase{
	{"lf", "data: a\n\ndata: b\n\n", []string{"", ""}, []string{"a", "b"}},
	{"crlf", "event: x\r\ndata: {\"k\":1}\r\n\r\ndata: [DONE]\r\n\r\n", []string{"x", ""}, []string{`{"k":1}`, "[DONE]"}},
	{"cr", "data: a\r\rdata: b\r\r", []string{"", ""}, []string{"a", "b"}},
	{"no space", "data:a\n\n", []string{""}, []string{"a"}},
	{"multi data", "data: a\ndata: b\ndata: c\n\n", []string{""}, []string{"a\nb\nc"}},
	{"comment only", ": keep-alive\n\ndata: x\n\n", []string{"", ""}, []string{"", "x"}},
	{"trailing data space kept", "data: {\"a\":1} \n\n", []string{""}, []string{`{"a":1} `}},
	{"unterminated last", "data: a\n\ndata: b", []string{"", ""}, []string{"a", "b"}},
	{"named", "event: message_start\ndata: {}\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\n", []string{"message_start", "ping"}, []string{"{}", `{"type": "ping"}`}},
}

func readAll(t *testing.T, r io.Reader, bufSize int) ([]Event, string) {
	t.Helper()
	er := NewEventReader(r, make([]byte, 0, bufSize), 1<<20)
	var evs []Event
	var raw strings.Builder
	for {
		ev, err := er.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		raw.Write(ev.Raw)
		// Copy: slices are valid until the next call only.
		evs = append(evs, Event{Raw: bytes.Clone(ev.Raw), Name: bytes.Clone(ev.Name), Data: bytes.Clone(ev.Data)})
	}
	return evs, raw.String()
}

func TestEventReader_SplitsEvents(t *testing.T) {
	t.Parallel()
	for _, tc := range sseCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, mode := range []string{"whole", "onebyte"} {
				var r io.Reader = strings.NewReader(tc.in)
				if mode == "onebyte" {
					r = iotest.OneByteReader(r)
				}
				evs, raw := readAll(t, r, 2)
				if raw != tc.in {
					t.Errorf("%s: raw bytes changed:\n got %q\nwant %q", mode, raw, tc.in)
				}
				var data []string
				for _, ev := range evs {
					if len(ev.Data) > 0 || len(ev.Name) > 0 || len(bytes.TrimSpace(ev.Raw)) > 0 {
						data = append(data, string(ev.Data))
					}
				}
				if strings.Join(data, "|") != strings.Join(tc.datas, "|") {
					t.Errorf("%s: data = %q, want %q", mode, data, tc.datas)
				}
			}
		})
	}
}

// TestEventReader_EverySplit feeds a stream split into two reads at every
// byte: the events must come out the same.
func TestEventReader_EverySplit(t *testing.T) {
	t.Parallel()
	in := "event: a\r\ndata: {\"x\":1}\r\n\r\n: c\n\ndata: one\ndata: two\n\nevent: b\rdata: z\r\r"
	want, _ := readAll(t, strings.NewReader(in), 4096)
	for i := 1; i < len(in); i++ {
		r := io.MultiReader(strings.NewReader(in[:i]), strings.NewReader(in[i:]))
		got, raw := readAll(t, r, 3)
		if raw != in || len(got) != len(want) {
			t.Fatalf("split %d: %d events, raw %q", i, len(got), raw)
		}
		for j := range got {
			if !bytes.Equal(got[j].Data, want[j].Data) || !bytes.Equal(got[j].Name, want[j].Name) {
				t.Errorf("split %d event %d: got %q/%q want %q/%q", i, j, got[j].Name, got[j].Data, want[j].Name, want[j].Data)
			}
		}
	}
}

func TestEventReader_LimitsEventSize(t *testing.T) {
	t.Parallel()
	er := NewEventReader(strings.NewReader("data: "+strings.Repeat("x", 100)+"\n\n"), nil, 64)
	if _, err := er.Next(); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("err = %v, want ErrEventTooLarge", err)
	}
}

func TestEventReader_ReturnsReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	er := NewEventReader(io.MultiReader(strings.NewReader("data: a\n\ndata: partial"), iotest.ErrReader(boom)), nil, 1<<10)
	if ev, err := er.Next(); err != nil || string(ev.Data) != "a" {
		t.Fatalf("first: %q %v", ev.Data, err)
	}
	if _, err := er.Next(); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom (the partial event is not returned)", err)
	}
}

func readAllString(t *testing.T, s string) ([]Event, string) {
	t.Helper()
	return readAll(t, strings.NewReader(s), 64)
}
