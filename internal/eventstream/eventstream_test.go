package eventstream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"testing"
	"time"

	awses "github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

func bedrockEvent(kind, payload string) Message {
	return Message{
		Headers: []Header{
			StringHeader(":event-type", kind),
			StringHeader(":content-type", "application/json"),
			StringHeader(":message-type", "event"),
		},
		Payload: []byte(payload),
	}
}

// The SDK's decoder is the judge of what Append writes.
func TestAppend_DecodesWithTheAWSSDK(t *testing.T) {
	var stream []byte
	var err error
	for _, m := range []Message{
		bedrockEvent("messageStart", `{"role":"assistant"}`),
		bedrockEvent("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hi"},"p":"abcd"}`),
		{Headers: []Header{{Name: "flag", Type: TypeTrue}, {Name: "n", Type: TypeInt32, Value: []byte{0, 0, 1, 0}}}},
	} {
		if stream, err = Append(stream, m); err != nil {
			t.Fatal(err)
		}
	}
	r := bytes.NewReader(stream)
	dec := awses.NewDecoder()
	m, err := dec.Decode(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Headers.Get(":event-type").String(); got != "messageStart" || string(m.Payload) != `{"role":"assistant"}` {
		t.Fatalf("first message %q %q", got, m.Payload)
	}
	m, err = dec.Decode(r, nil)
	if err != nil || m.Headers.Get(":event-type").String() != "contentBlockDelta" {
		t.Fatalf("second message %v %v", m.Headers, err)
	}
	m, err = dec.Decode(r, nil)
	if err != nil || m.Headers.Get("flag").String() != "true" || m.Headers.Get("n").Get() != int32(256) {
		t.Fatalf("third message %v %v", m.Headers, err)
	}
}

// And it decodes what the SDK writes, every header type included.
func TestDecoder_ReadsWhatTheAWSSDKWrites(t *testing.T) {
	var hs awses.Headers
	hs.Set(":event-type", awses.StringValue("chunk"))
	hs.Set("b", awses.BoolValue(false))
	hs.Set("i8", awses.Int8Value(-3))
	hs.Set("i16", awses.Int16Value(300))
	hs.Set("i64", awses.Int64Value(1<<40))
	hs.Set("raw", awses.BytesValue([]byte{1, 2, 3}))
	hs.Set("ts", awses.TimestampValue(time.UnixMilli(1700000000123)))
	hs.Set("id", awses.UUIDValue([16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}))
	var buf bytes.Buffer
	enc := awses.NewEncoder()
	for _, p := range []string{`{"bytes":"eyJ0eXBlIjoibWVzc2FnZV9zdG9wIn0="}`, ""} {
		if err := enc.Encode(&buf, awses.Message{Headers: hs, Payload: []byte(p)}); err != nil {
			t.Fatal(err)
		}
	}
	d := NewDecoder(&buf, nil)
	m, err := d.Next()
	if err != nil {
		t.Fatal(err)
	}
	if m.String(":event-type") != "chunk" || string(m.Payload) != `{"bytes":"eyJ0eXBlIjoibWVzc2FnZV9zdG9wIn0="}` || len(m.Headers) != 8 {
		t.Fatalf("%+v", m)
	}
	want := map[string][]byte{"b": nil, "i8": {0xfd}, "i16": {1, 44}, "raw": {1, 2, 3}, "ts": binary.BigEndian.AppendUint64(nil, 1700000000123)}
	for _, h := range m.Headers {
		if w, ok := want[h.Name]; ok && !bytes.Equal(h.Value, w) {
			t.Errorf("header %s = %v, want %v", h.Name, h.Value, w)
		}
	}
	if m, err = d.Next(); err != nil || len(m.Payload) != 0 {
		t.Fatalf("second: %+v %v", m, err)
	}
	if _, err = d.Next(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}

func TestDecoder_RefusesCorruptMessages(t *testing.T) {
	good, err := Append(nil, bedrockEvent("messageStop", `{"stopReason":"end_turn"}`))
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x40
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"prelude crc", flip(9), ErrPreludeCRC},
		{"total length", flip(3), ErrPreludeCRC},
		{"payload byte", flip(len(good) - 6), ErrMessageCRC},
		{"message crc", flip(len(good) - 1), ErrMessageCRC},
		{"cut short", good[:len(good)-3], io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewDecoder(bytes.NewReader(tc.b), nil).Next(); !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
	// A prelude whose lengths are out of bounds, with a valid CRC.
	p := binary.BigEndian.AppendUint32(nil, MaxMessageLen+1)
	p = binary.BigEndian.AppendUint32(p, 0)
	p = binary.BigEndian.AppendUint32(p, crc32IEEE(p))
	if _, err := NewDecoder(bytes.NewReader(p), nil).Next(); !errors.Is(err, ErrLength) {
		t.Fatalf("oversized: %v", err)
	}
}

// A stream read a byte at a time decodes the same.
func TestDecoder_ByteAtATime(t *testing.T) {
	var stream []byte
	for _, p := range []string{`{"a":1}`, `{"b":2}`} {
		stream, _ = Append(stream, bedrockEvent("x", p))
	}
	d := NewDecoder(&oneByte{b: stream}, make([]byte, 0, 16))
	for _, want := range []string{`{"a":1}`, `{"b":2}`} {
		m, err := d.Next()
		if err != nil || string(m.Payload) != want {
			t.Fatalf("%q %v", m.Payload, err)
		}
	}
}

type oneByte struct{ b []byte }

func (o *oneByte) Read(p []byte) (int, error) {
	if len(o.b) == 0 {
		return 0, io.EOF
	}
	p[0] = o.b[0]
	o.b = o.b[1:]
	return 1, nil
}

func FuzzDecode(f *testing.F) {
	good, _ := Append(nil, bedrockEvent("contentBlockDelta", `{"delta":{"text":"x"}}`))
	f.Add(good)
	f.Add(good[:20])
	all, _ := Append(nil, Message{Headers: []Header{{Name: "u", Type: TypeUUID, Value: make([]byte, 16)}, {Name: "t", Type: TypeFalse}}})
	f.Add(all)
	f.Add([]byte{0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := NewDecoder(bytes.NewReader(b), nil).Next()
		if err != nil {
			return
		}
		out, err := Append(nil, m)
		if err != nil {
			t.Fatalf("re-encode a decoded message: %v", err)
		}
		if !bytes.Equal(out, b[:len(out)]) {
			t.Fatalf("re-encoded differently")
		}
		if _, err := Decode(out); err != nil {
			t.Fatalf("Decode refuses what Next read: %v", err)
		}
	})
}

func BenchmarkDecoder(b *testing.B) {
	var stream []byte
	for range 64 {
		stream, _ = Append(stream, bedrockEvent("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hello there, how are"},"p":"abcdefghijkl"}`))
	}
	r := bytes.NewReader(stream)
	d := NewDecoder(r, nil)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(stream)
		for {
			if _, err := d.Next(); err != nil {
				break
			}
		}
	}
}

func crc32IEEE(b []byte) uint32 { return crc32.ChecksumIEEE(b) }
