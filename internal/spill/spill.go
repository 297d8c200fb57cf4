// Package spill keeps a large request body out of memory: the bytes go to
// a temporary file that is unlinked as soon as it is made, so only the
// open descriptor holds them and nothing stays on disk after Close, a
// crash or a kill. The file is read back in sections (one per upstream
// attempt) and, for a scan, mapped for the scan's length.
package spill

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrDisk marks an error of the temporary file (not of the reader).
var ErrDisk = errors.New("spill: temporary file")

// File is a body held in an unlinked temporary file.
type File struct {
	f    *os.File
	size int64
}

// New writes head and then the rest of r to a new unlinked file in dir
// ("" for the system's temporary directory). An error from r is returned
// wrapped, so callers can tell a reader's error (http.MaxBytesError, say)
// with errors.As.
func New(dir string, head []byte, r io.Reader) (*File, error) {
	f, err := os.CreateTemp(dir, "relay-body-*")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDisk, err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %w", ErrDisk, err)
	}
	s := &File{f: f}
	n, err := f.Write(head)
	s.size += int64(n)
	rr := &readErr{r: r}
	if err == nil {
		var m int64
		m, err = io.Copy(f, rr)
		s.size += m
	}
	switch {
	case rr.err != nil:
		f.Close()
		return nil, fmt.Errorf("spill: %w", rr.err)
	case err != nil:
		f.Close()
		return nil, fmt.Errorf("%w: %w", ErrDisk, err)
	}
	return s, nil
}

// readErr keeps its reader's error apart from the writer's.
type readErr struct {
	r   io.Reader
	err error
}

func (e *readErr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF {
		e.err = err
	}
	return n, err
}

// Size is the body's length.
func (s *File) Size() int64 { return s.size }

// Section reads n bytes of the body from off. Sections read independently
// of each other; once the File is closed they fail with os.ErrClosed.
func (s *File) Section(off, n int64) *io.SectionReader {
	return io.NewSectionReader(s.f, off, n)
}

// Head is the body's first n bytes (fewer when it is shorter).
func (s *File) Head(n int) []byte {
	b := make([]byte, min(int64(n), s.size))
	k, _ := s.f.ReadAt(b, 0)
	return b[:k]
}

// Scan calls fn with the whole body, mapped into memory rather than read
// onto the heap where the system allows; b is valid only during fn.
func (s *File) Scan(fn func(b []byte) error) error { return scan(s, fn) }

// Close releases the file, and with it the bytes.
func (s *File) Close() error { return s.f.Close() }
