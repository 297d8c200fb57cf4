package proxy

import (
	"io"
	"sync"
	"sync/atomic"

	"github.com/relay-llm/relay/internal/wire"
)

// streamBufSize is a stream's read buffer while events are at hand.
const streamBufSize = 32 << 10

// streamBuf is one read buffer a stream borrows.
type streamBuf struct{ b []byte }

// streamBufs lends streams their read buffers: taken when events come,
// given back when the stream waits for its upstream, so an open stream
// that is quiet holds none. lent counts those out.
type streamBufs struct {
	pool sync.Pool // *streamBuf
	lent atomic.Int64
}

func (s *streamBufs) get() *streamBuf {
	s.lent.Add(1)
	if b, ok := s.pool.Get().(*streamBuf); ok {
		return b
	}
	return &streamBuf{b: make([]byte, 0, streamBufSize)}
}

func (s *streamBufs) put(b *streamBuf) {
	if b == nil {
		return
	}
	s.lent.Add(-1)
	if cap(b.b) > 2*streamBufSize {
		b.b = make([]byte, 0, streamBufSize) // a grown one is not kept
	}
	s.pool.Put(b)
}

// awaiter is an upstream body that can wait for bytes without a buffer
// (upstream's HTTP/1.1 body over plain TCP).
type awaiter interface{ Await() bool }

// eventSource reads a stream's events, its buffer borrowed only while the
// upstream has bytes at hand: before a read that would wait, with nothing
// of an event left unread, it gives the buffer back and awaits the body.
type eventSource struct {
	er       wire.EventReader
	body     countingReader
	await    awaiter // nil: the body cannot wait without a buffer
	bufs     *streamBufs
	buf      *streamBuf
	returned int64 // bytes of the events returned
}

// countingReader counts what the event reader read.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (s *eventSource) init(bufs *streamBufs, body io.Reader, up io.Reader) {
	s.bufs, s.body.r = bufs, body
	s.await, _ = up.(awaiter)
	s.buf = bufs.get()
	s.er = *wire.NewEventReader(&s.body, s.buf.b, maxEventBytes)
}

// More is the event reader's.
func (s *eventSource) More() bool { return s.er.More() }

// Next returns the next event (see wire.EventReader.Next).
func (s *eventSource) Next() (wire.Event, error) {
	if s.await != nil && s.body.n == s.returned && !s.er.More() {
		s.bufs.put(s.buf)
		s.buf = nil
		s.await.Await()
		s.buf = s.bufs.get()
		s.er = *wire.NewEventReader(&s.body, s.buf.b, maxEventBytes)
	}
	ev, err := s.er.Next()
	s.returned += int64(len(ev.Raw))
	return ev, err
}

// close gives the buffer back.
func (s *eventSource) close() {
	if s.buf != nil {
		s.buf.b = s.er.Buffer()
		s.bufs.put(s.buf)
		s.buf = nil
	}
}

// upstreamBody is the upstream's body under the attempt's idle reader.
func upstreamBody(body io.Reader) io.Reader {
	if ir, ok := body.(*idleReader); ok {
		return ir.r
	}
	return body
}
