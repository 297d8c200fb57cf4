package spill_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
	"testing/iotest"

	"github.com/relay-llm/relay/internal/spill"
)

// A spilled body is head then the reader's bytes, leaves no file in its
// directory from the moment New returns, reads back whole in sections and
// in a scan, and reads an error once closed.
func TestFile_HoldsTheBodyAndNothingOnDisk(t *testing.T) {
	dir := t.TempDir()
	head := []byte("head-")
	rest := bytes.Repeat([]byte("0123456789"), 300_000)
	f, err := spill.New(dir, head, bytes.NewReader(rest))
	if err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("%d entries left in the directory", len(ents))
	}
	want := append(append([]byte{}, head...), rest...)
	if f.Size() != int64(len(want)) {
		t.Fatalf("size %d, want %d", f.Size(), len(want))
	}
	got, err := io.ReadAll(io.MultiReader(f.Section(0, 7), f.Section(7, f.Size()-7)))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("sections read %d bytes, %v", len(got), err)
	}
	if h := f.Head(3); string(h) != "hea" {
		t.Fatalf("head %q", h)
	}
	if err := f.Scan(func(b []byte) error {
		if !bytes.Equal(b, want) {
			t.Errorf("scan saw %d bytes", len(b))
		}
		return errors.New("stop")
	}); err == nil || err.Error() != "stop" {
		t.Fatalf("scan returned %v, want fn's error", err)
	}
	s := f.Section(0, 10)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(s); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("a section of a closed file read %v", err)
	}
}

// The reader's error comes back wrapped, not taken for the disk's; a
// directory that cannot take the file is the disk's.
func TestNew_TellsReaderErrorsFromDiskErrors(t *testing.T) {
	boom := errors.New("boom")
	_, err := spill.New(t.TempDir(), []byte("x"), io.MultiReader(bytes.NewReader([]byte("abc")), iotest.ErrReader(boom)))
	if !errors.Is(err, boom) || errors.Is(err, spill.ErrDisk) {
		t.Fatalf("reader error came back as %v", err)
	}
	_, err = spill.New("/nonexistent/dir", nil, bytes.NewReader(nil))
	if !errors.Is(err, spill.ErrDisk) {
		t.Fatalf("disk error came back as %v", err)
	}
}
