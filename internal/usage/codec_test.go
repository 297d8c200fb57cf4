package usage

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store"
)

func codecRows() map[string]store.UsageEvent {
	id := uuid.MustParse("0192f0a4-5b7c-7d8e-9f00-112233445566")
	s := "client-1"
	route := "b1/k0 ordered affinity=miss"
	return map[string]store.UsageEvent{
		"refused before routing": {RequestID: "req_a", CreatedAt: time.Date(2026, 12, 2, 1, 2, 3, 456789000, time.UTC),
			RelayKeyID: &id, ProjectID: &id, Model: "nope", InboundShape: "openai_chat", Status: 404, ErrorKind: "model_not_found"},
		"routed, every field": {RequestID: "req_b", CreatedAt: time.Date(2026, 12, 2, 1, 2, 3, 1, time.UTC),
			InferenceTokenID: &id, ServiceAccountID: &id, UserID: &id, ProjectID: &id, TeamID: &id, PolicyID: &id,
			BindingID: &id, HostID: &id, HostKeyID: &id, Model: "gpt-4o", InboundShape: "anthropic_messages", UpstreamShape: "openai",
			Stream: true, Status: 200, Attempts: 2, InputTokens: 1 << 40, OutputTokens: 7, CachedReadTokens: 3, CacheWriteTokens: 1,
			ReasoningTokens: 2, Cost: -1, Saved: 1 << 62, TTFBMs: 12, TotalMs: 1 << 30, OverheadUs: 99,
			ClientRequestID: &s, Route: &route, RouteDetail: json.RawMessage(`{"candidates":[]}`)},
		"empty detail is not none": {RequestID: "", CreatedAt: time.Unix(0, 0).UTC(), RouteDetail: json.RawMessage{}},
	}
}

// TestCodec_RoundTrip: what appendRecord frames, nextRecord and decodeRow
// give back field for field, records one after another.
func TestCodec_RoundTrip(t *testing.T) {
	t.Parallel()
	for name, row := range codecRows() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := appendRecord(nil, &row)
			b = appendRecord(b, &row)
			for range 2 {
				body, rest, err := nextRecord(b)
				if err != nil {
					t.Fatal(err)
				}
				got, err := decodeRow(body)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, row) {
					t.Errorf("decoded %+v\nwant    %+v", got, row)
				}
				b = rest
			}
			if len(b) != 0 {
				t.Errorf("%d bytes left", len(b))
			}
		})
	}
}

// TestCodec_TornRecordStopsTheReader: a record cut anywhere, or with a byte
// changed, is refused, and readJournal keeps the whole ones before it.
func TestCodec_TornRecordStopsTheReader(t *testing.T) {
	t.Parallel()
	row := codecRows()["routed, every field"]
	one := appendRecord(nil, &row)
	for cut := range len(one) {
		data := append(appendRecord(nil, &row), one[:cut]...)
		rows, n := readJournal(data, nil, nil)
		if len(rows) != 1 || n != 1 {
			t.Fatalf("cut at %d: %d rows, %d records; want the whole first one only", cut, len(rows), n)
		}
	}
	for i := range len(one) {
		bad := bytes.Clone(one)
		bad[i] ^= 0x40
		if body, _, err := nextRecord(bad); err == nil {
			if _, err := decodeRow(body); err == nil && i < frameHeader {
				t.Errorf("byte %d changed: accepted", i)
			}
		}
	}
}

// TestMarks_RoundTrip: marks written are marks read; damaged ones are not
// trusted (the segment is then replayed whole).
func TestMarks_RoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	seg := &jsegment{}
	for _, i := range []int{0, 63, 64, 4095} {
		seg.mark(i)
	}
	if err := writeMarks(dir, 7, seg.marks); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, journalName(7)), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sp := &spool{dir: dir}
	if got, ok := sp.parseJournal(journalName(7)); !ok || got.events != 4 || !reflect.DeepEqual(got.marks, seg.marks) {
		t.Errorf("taken over as %+v, want its 4 marks", got)
	}
	// Damaged marks: the segment is replayed whole (here: no record).
	if err := os.WriteFile(filepath.Join(dir, marksName(7)), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, ok := sp.parseJournal(journalName(7)); !ok || got.marks != nil || got.events != 0 {
		t.Errorf("with damaged marks taken over as %+v, want whole", got)
	}
	if popcount(seg.marks) != 4 || seg.marked != 4 {
		t.Errorf("popcount %d, marked %d; want 4", popcount(seg.marks), seg.marked)
	}
}

func FuzzDecodeRow(f *testing.F) {
	for _, row := range codecRows() {
		f.Add(appendRow(nil, &row))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		row, err := decodeRow(body)
		if err != nil {
			return
		}
		// What decodes survives a round trip (the bytes may differ: a
		// varint may be written longer than it needs).
		again, err := decodeRow(appendRow(nil, &row))
		if err != nil || !reflect.DeepEqual(again, row) {
			t.Fatalf("decoded %+v; its re-encoding decodes as %+v, %v", row, again, err)
		}
	})
}

func FuzzReadJournal(f *testing.F) {
	row := codecRows()["routed, every field"]
	f.Add(appendRecord(appendRecord(nil, &row), &row))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, n := readJournal(data, nil, nil)
		if len(rows) > n {
			t.Fatalf("%d rows from %d records", len(rows), n)
		}
	})
}

func FuzzDecodeMarks(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		marks, ok := decodeMarks(b)
		if ok && len(marks) != (journalSegmentEvents+63)/64 {
			t.Fatalf("%d words", len(marks))
		}
	})
}

// BenchmarkAppendRecord is what journaling costs Record: encoding one
// routed row (with and without its full decision) into a reused buffer.
//
//	go test ./internal/usage -run '^$' -bench AppendRecord -benchmem
func BenchmarkAppendRecord(b *testing.B) {
	full := codecRows()["routed, every field"]
	full.RouteDetail = bytes.Repeat([]byte("x"), 1000)
	short := full
	short.RouteDetail = nil
	for name, row := range map[string]store.UsageEvent{"full-detail": full, "short": short} {
		b.Run(name, func(b *testing.B) {
			var buf []byte
			for b.Loop() {
				buf = appendRecord(buf[:0], &row)
			}
			b.ReportMetric(float64(len(buf)), "B/record")
		})
	}
}
