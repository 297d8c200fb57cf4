package eventstream

import (
	"bytes"
	"encoding/json"
	"io"
)

// SSEReader reads an event stream and gives it back as server-sent events,
// one per message, so a stream of Bedrock's reads like every other
// provider's: an event message becomes "event: <:event-type>" with its
// payload as data; an exception "event: <:exception-type>" with its
// payload. With Chunks, each "chunk" message's payload {"bytes": base64}
// is unwrapped (InvokeModelWithResponseStream carries a provider's own
// stream events that way): the event is named by the inner JSON's "type"
// and its data is that JSON; an exception then becomes Anthropic's
// "event: error" (the only provider whose stream Bedrock chunks).
type SSEReader struct {
	d      *Decoder
	chunks bool
	out    []byte
	at     int
	err    error
}

// NewSSEReader reads the event stream r; chunks unwraps "chunk" messages.
func NewSSEReader(r io.Reader, chunks bool) *SSEReader {
	return &SSEReader{d: NewDecoder(r, nil), chunks: chunks}
}

// Read implements io.Reader: it decodes one message whenever the last
// one's event has been read, so what a read returns is never more than
// one event and never waits for the next message.
func (s *SSEReader) Read(p []byte) (int, error) {
	for s.at == len(s.out) {
		if s.err != nil {
			return 0, s.err
		}
		m, err := s.d.Next()
		if err != nil {
			s.err = err
			continue
		}
		s.out, s.at = s.event(s.out[:0], &m), 0
	}
	n := copy(p, s.out[s.at:])
	s.at += n
	return n, nil
}

func (s *SSEReader) event(dst []byte, m *Message) []byte {
	name, payload := m.String(":event-type"), m.Payload
	exception := m.String(":message-type") == "exception"
	if exception {
		name = m.String(":exception-type")
	}
	if s.chunks {
		if exception {
			return appendEvent(dst, "error", anthropicError(name, payload))
		}
		if name == "chunk" {
			var c struct {
				Bytes []byte `json:"bytes"` // base64 in JSON
			}
			if json.Unmarshal(payload, &c) == nil && len(c.Bytes) > 0 {
				var t struct {
					Type string `json:"type"`
				}
				_ = json.Unmarshal(c.Bytes, &t)
				return appendEvent(dst, t.Type, c.Bytes)
			}
		}
	}
	return appendEvent(dst, name, payload)
}

// appendEvent writes one SSE event; a payload's line breaks (JSON
// whitespace only, in compact JSON) become further data lines.
func appendEvent(dst []byte, name string, data []byte) []byte {
	if name != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, name...)
		dst = append(dst, '\n')
	}
	for {
		dst = append(dst, "data: "...)
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			dst = append(dst, data...)
			break
		}
		dst = append(dst, data[:i]...)
		dst = append(dst, '\n')
		data = data[i+1:]
	}
	return append(dst, "\n\n"...)
}

// anthropicError is Anthropic's stream error for a Bedrock exception.
func anthropicError(typ string, payload []byte) []byte {
	var p struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(payload, &p)
	kind := "api_error"
	switch typ {
	case "throttlingException":
		kind = "rate_limit_error"
	case "serviceUnavailableException":
		kind = "overloaded_error"
	case "validationException":
		kind = "invalid_request_error"
	case "modelTimeoutException":
		kind = "timeout_error"
	}
	if p.Message == "" {
		p.Message = "Bedrock reported " + typ + " in the stream."
	}
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": kind, "message": p.Message}})
	return b
}
