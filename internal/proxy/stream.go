package proxy

import (
	"io"
	"net/http"
	"sync"
	"time"
)

const keepAliveComment = ": keep-alive\n\n"

// streamWriter writes SSE to the caller, flushing when told to (when the
// upstream has nothing more at hand, so events that arrived together leave
// in one write and none waits for the next read), and sends a keep-alive
// comment when the stream has been silent for the interval. The
// keep-alive runs on a timer goroutine, hence the mutex.
type streamWriter struct {
	rc       *http.ResponseController
	w        http.ResponseWriter
	interval time.Duration
	timer    *time.Timer

	mu     sync.Mutex
	last   time.Time // last write
	err    error     // first write error: the caller is gone
	closed bool      // the handler is done with w
}

func newStreamWriter(w http.ResponseWriter, interval time.Duration) *streamWriter {
	s := &streamWriter{w: w, rc: http.NewResponseController(w), interval: interval, last: time.Now()}
	if interval > 0 {
		s.timer = time.AfterFunc(interval, s.keepAlive)
	}
	return s
}

// write writes p and flushes it to the caller.
func (s *streamWriter) write(p []byte) error { return s.send(p, true) }

// send writes p (nothing when it is empty), and flushes what is buffered
// to the caller when flush is set. A caller that does not flush must flush
// before it next waits.
func (s *streamWriter) send(p []byte, flush bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil && len(p) > 0 {
		_, s.err = s.w.Write(p)
		s.last = time.Now()
	}
	if s.err == nil && flush {
		s.err = s.rc.Flush()
	}
	return s.err
}

func (s *streamWriter) flush() error { return s.send(nil, true) }

func (s *streamWriter) failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err != nil
}

func (s *streamWriter) keepAlive() {
	s.mu.Lock()
	if s.closed || s.err != nil {
		s.mu.Unlock()
		return
	}
	next := s.interval - time.Since(s.last)
	if next <= 0 {
		if _, s.err = io.WriteString(s.w, keepAliveComment); s.err == nil {
			s.err = s.rc.Flush()
		}
		s.last = time.Now()
		next = s.interval
	}
	s.mu.Unlock()
	s.timer.Reset(next)
}

// close stops the keep-alives; w is not touched afterwards.
func (s *streamWriter) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
	}
}
