package wire

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// countingReader counts the reads made of it.
type countingReader struct {
	r     io.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

// TestEventReader_More feeds a stream split into two reads at every byte
// and asks More before every Next: the events come out as without it, and
// whenever More says true the Next that follows reads nothing.
func TestEventReader_More(t *testing.T) {
	t.Parallel()
	in := "event: a\r\ndata: {\"x\":1}\r\n\r\n: c\n\ndata: one\ndata: two\n\nevent: b\rdata: z\r\r"
	want, _ := readAll(t, strings.NewReader(in), 4096)
	for i := 1; i < len(in); i++ {
		cr := &countingReader{r: io.MultiReader(strings.NewReader(in[:i]), strings.NewReader(in[i:]))}
		er := NewEventReader(cr, make([]byte, 0, 3), 1<<20)
		var got []Event
		var raw bytes.Buffer
		for {
			more := er.More()
			reads := cr.reads
			ev, err := er.Next()
			if more && cr.reads != reads {
				t.Fatalf("split %d: More said an event was ready, Next read", i)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			raw.Write(ev.Raw)
			got = append(got, Event{Raw: bytes.Clone(ev.Raw), Name: bytes.Clone(ev.Name), Data: bytes.Clone(ev.Data)})
			er.More() // twice in a row changes nothing
		}
		if raw.String() != in || len(got) != len(want) {
			t.Fatalf("split %d: %d events, raw %q", i, len(got), raw.String())
		}
		for j := range got {
			if !bytes.Equal(got[j].Data, want[j].Data) || !bytes.Equal(got[j].Name, want[j].Name) {
				t.Errorf("split %d event %d: got %q/%q want %q/%q", i, j, got[j].Name, got[j].Data, want[j].Name, want[j].Data)
			}
		}
	}
	// Two events read at once: More is true after the first.
	er := NewEventReader(strings.NewReader("data: a\n\ndata: b\n\n"), nil, 1<<20)
	if er.More() {
		t.Fatal("More before any read")
	}
	if _, err := er.Next(); err != nil {
		t.Fatal(err)
	}
	if !er.More() {
		t.Fatal("the second event was read with the first, More says false")
	}
}
