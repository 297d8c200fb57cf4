package wire

import (
	"bytes"
	"errors"
	"io"
)

// ErrEventTooLarge is an SSE event bigger than the reader's limit.
var ErrEventTooLarge = errors.New("sse event too large")

// Event is one server-sent event. Its slices are valid until the next call
// to EventReader.Next.
type Event struct {
	// Raw is the event exactly as it arrived, up to and including the blank
	// line that ends it. Concatenating every Raw gives back the stream.
	Raw []byte
	// Name is the value of the last "event:" field, empty when none.
	Name []byte
	// Data is the "data:" field values joined by '\n'; nil when none.
	Data []byte
}

// EventReader splits an SSE stream into events without copying them. It
// accepts "\n", "\r\n" and "\r" line endings and "data:" with or without
// the space.
type EventReader struct {
	r       io.Reader
	buf     []byte
	head    int // start of the unread window buf[head:tail]
	tail    int
	scan    int // buf[head:scan] holds no complete event
	lineAt  int // start of the line being scanned
	max     int
	err     error
	scratch []byte
	ready   int // when > 0, the end of the event at head, found by More
}

// NewEventReader reads from r into buf (which it grows as needed, up to max
// bytes for one event).
func NewEventReader(r io.Reader, buf []byte, max int) *EventReader {
	if cap(buf) == 0 {
		buf = make([]byte, 0, min(4096, max))
	}
	return &EventReader{r: r, buf: buf[:cap(buf)], max: max}
}

// Reset makes e read from r, keeping its buffers.
func (e *EventReader) Reset(r io.Reader) {
	*e = EventReader{r: r, buf: e.buf, max: e.max, scratch: e.scratch[:0]}
}

// Buffer returns the reader's buffer so its owner can pool it.
func (e *EventReader) Buffer() []byte { return e.buf[:0] }

// Next returns the next event. At the end of the stream, bytes after the
// last blank line come back as a final event without one; then Next
// returns io.EOF, or the read error that ended the stream.
func (e *EventReader) Next() (Event, error) {
	for {
		if e.ready > 0 {
			end := e.ready
			e.ready = 0
			ev := e.parse(e.buf[e.head:end])
			e.head, e.scan, e.lineAt = end, end, end
			return ev, nil
		}
		if end, ok := e.findEnd(); ok {
			ev := e.parse(e.buf[e.head:end])
			e.head, e.scan, e.lineAt = end, end, end
			return ev, nil
		}
		if e.err != nil {
			if e.head < e.tail && e.err == io.EOF {
				ev := e.parse(e.buf[e.head:e.tail])
				e.head, e.scan, e.lineAt = e.tail, e.tail, e.tail
				return ev, nil
			}
			return Event{}, e.err
		}
		if err := e.fill(); err != nil {
			return Event{}, err
		}
	}
}

// More reports whether Next can return without reading: a whole event is
// buffered, or the stream has ended. A caller that forwards events can
// write each and flush only when More is false, so events that arrived
// together leave together and none waits for the next read.
func (e *EventReader) More() bool {
	if e.ready > 0 || e.err != nil {
		return true
	}
	end, ok := e.findEnd()
	if ok {
		e.ready = end
	}
	return ok
}

// fill reads more bytes, first making room by moving the unread window to
// the front or growing the buffer.
func (e *EventReader) fill() error {
	if e.tail-e.head >= e.max {
		return ErrEventTooLarge
	}
	if e.tail == len(e.buf) {
		if e.head > 0 {
			n := copy(e.buf, e.buf[e.head:e.tail])
			e.scan -= e.head
			e.lineAt -= e.head
			e.head, e.tail = 0, n
		} else {
			nb := make([]byte, max(min(2*len(e.buf), e.max), 64))
			copy(nb, e.buf[:e.tail])
			e.buf = nb
		}
	}
	n, err := e.r.Read(e.buf[e.tail:])
	e.tail += n
	if err != nil {
		e.err = err
	}
	return nil
}

// findEnd looks for the blank line that ends the event at head, resuming
// where the last look stopped, and returns the index just past it.
func (e *EventReader) findEnd() (int, bool) {
	b := e.buf[:e.tail]
	for i := e.scan; i < len(b); i++ {
		c := b[i]
		if c != '\n' && c != '\r' {
			continue
		}
		next := i + 1
		if c == '\r' {
			if next == len(b) && e.err == nil {
				// "\r" may be half of "\r\n": wait for the next byte.
				e.scan = i
				return 0, false
			}
			if next < len(b) && b[next] == '\n' {
				next++
			}
		}
		empty := i == e.lineAt
		e.lineAt = next
		i = next - 1
		if empty {
			return next, true
		}
	}
	e.scan = len(b)
	return 0, false
}

// parse reads the fields of one event.
func (e *EventReader) parse(raw []byte) Event {
	ev := Event{Raw: raw}
	dataLines := 0
	for len(raw) > 0 {
		line := raw
		next := len(raw)
		if j := bytes.IndexAny(raw, "\r\n"); j >= 0 {
			line = raw[:j]
			next = j + 1
			if raw[j] == '\r' && j+1 < len(raw) && raw[j+1] == '\n' {
				next++
			}
		}
		raw = raw[next:]
		if len(line) == 0 || line[0] == ':' {
			continue
		}
		name, value := line, []byte(nil)
		if j := bytes.IndexByte(line, ':'); j >= 0 {
			name, value = line[:j], line[j+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(name) {
		case "event":
			ev.Name = value
		case "data":
			dataLines++
			switch dataLines {
			case 1:
				ev.Data = value
				if ev.Data == nil {
					ev.Data = line[len(line):]
				}
			case 2:
				e.scratch = append(append(append(e.scratch[:0], ev.Data...), '\n'), value...)
				ev.Data = e.scratch
			default:
				e.scratch = append(append(e.scratch, '\n'), value...)
				ev.Data = e.scratch
			}
		}
	}
	return ev
}
