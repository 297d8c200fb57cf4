package guardrail

// Stream checks a streamed answer's text as it flows: Write takes each
// piece of text and returns what may be released — everything but the
// last Window bytes, which a match may still be growing into — or the
// match that blocks. Flush releases the rest at the end. No byte is
// released before every detector has seen it with Window bytes after it
// (or the end), so a match no longer than Window is never released in
// part.
type Stream struct {
	ds     []Detector
	window int
	held   []byte
	base   int  // the offset of held in the whole text
	memo   Memo // (memo.go)
	// done is set once a match blocked: nothing more is released.
	done bool
}

// NewStream returns a Stream over ds holding back window bytes (at least
// MaxMatch).
func NewStream(ds []Detector, window int) *Stream {
	return &Stream{ds: ds, window: max(window, MaxMatch)}
}

// Write adds text. It returns the text that may go to the caller now, or
// the blocking match (whose offsets are within the held text, never
// reported to a caller).
func (s *Stream) Write(text string) (release string, blocked *Match) {
	if s.done {
		return "", nil
	}
	s.held = append(s.held, text...)
	if ms := ScanAt(s.ds, string(s.held), s.base, &s.memo); len(ms) > 0 {
		s.done = true
		return "", &ms[0]
	}
	n := len(s.held) - s.window
	if n <= 0 {
		return "", nil
	}
	// Release whole UTF-8 sequences only.
	for n > 0 && s.held[n]&0xC0 == 0x80 {
		n--
	}
	release = string(s.held[:n])
	s.held = append(s.held[:0], s.held[n:]...)
	s.base += n
	return release, nil
}

// Flush returns the held text at the end of the stream, or the match that
// blocks it.
func (s *Stream) Flush() (release string, blocked *Match) {
	if s.done {
		return "", nil
	}
	s.done = true
	if ms := ScanAt(s.ds, string(s.held), s.base, &s.memo); len(ms) > 0 {
		return "", &ms[0]
	}
	release, s.held = string(s.held), s.held[:0]
	return release, nil
}

// Held is how many bytes the stream holds back now.
func (s *Stream) Held() int { return len(s.held) }
