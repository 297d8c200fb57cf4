// Package eventstream reads and writes the AWS event-stream binary
// framing (application/vnd.amazon.eventstream) that Bedrock's streaming
// operations answer in: each message is a prelude (total length, headers
// length, the prelude's CRC32), typed headers, a payload and a CRC32 of
// the whole message.
//
// It owns the framing only: what a message's headers and payload mean
// (":event-type", ":message-type", Bedrock's chunk bytes) is its callers'
// business. It does no logging and keeps no state beyond one decoder's
// buffer.
package eventstream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Limits of one message, as AWS sets them.
const (
	preludeLen     = 12
	minMessageLen  = preludeLen + 4
	MaxMessageLen  = 16 << 20
	MaxHeadersLen  = 128 << 10
	maxHeaderName  = 255
	maxHeaderValue = 1<<15 - 1
)

// Header value types.
const (
	TypeTrue      byte = 0
	TypeFalse     byte = 1
	TypeByte      byte = 2
	TypeInt16     byte = 3
	TypeInt32     byte = 4
	TypeInt64     byte = 5
	TypeBytes     byte = 6
	TypeString    byte = 7
	TypeTimestamp byte = 8
	TypeUUID      byte = 9
)

// Header is one message header. Value holds the value's bytes as they are
// on the wire after the type (without the length of a bytes or string
// value): a string's UTF-8, an integer's big-endian bytes, nothing for a
// boolean.
type Header struct {
	Name  string
	Type  byte
	Value []byte
}

// Message is one decoded message. A decoder's Payload and header values
// are valid until its next call.
type Message struct {
	Headers []Header
	Payload []byte
}

// String is the value of the string header name, "" when absent or not a
// string.
func (m *Message) String(name string) string {
	for i := range m.Headers {
		if h := &m.Headers[i]; h.Name == name && h.Type == TypeString {
			return string(h.Value)
		}
	}
	return ""
}

// Errors a decoder returns for a message that is not well formed.
var (
	ErrPreludeCRC = errors.New("eventstream: prelude checksum mismatch")
	ErrMessageCRC = errors.New("eventstream: message checksum mismatch")
	ErrLength     = errors.New("eventstream: message length out of bounds")
	ErrHeaders    = errors.New("eventstream: malformed headers")
)

var table = crc32.IEEETable

// Decoder reads messages from a byte stream.
type Decoder struct {
	r   io.Reader
	buf []byte
	hs  []Header
}

// NewDecoder reads messages from r, using buf (grown as needed).
func NewDecoder(r io.Reader, buf []byte) *Decoder {
	return &Decoder{r: r, buf: buf[:0]}
}

// Next reads the next message. A stream that ends between messages is
// io.EOF; one that ends inside a message io.ErrUnexpectedEOF.
func (d *Decoder) Next() (Message, error) {
	if cap(d.buf) < preludeLen {
		d.buf = make([]byte, 0, 4096)
	}
	p := d.buf[:preludeLen]
	if _, err := io.ReadFull(d.r, p); err != nil {
		return Message{}, err
	}
	total := binary.BigEndian.Uint32(p[0:4])
	hlen := binary.BigEndian.Uint32(p[4:8])
	if crc32.Checksum(p[:8], table) != binary.BigEndian.Uint32(p[8:12]) {
		return Message{}, ErrPreludeCRC
	}
	if total < minMessageLen || total > MaxMessageLen || hlen > MaxHeadersLen || hlen > total-minMessageLen {
		return Message{}, ErrLength
	}
	if cap(d.buf) < int(total) {
		nb := make([]byte, total)
		copy(nb, p)
		d.buf = nb[:0]
	}
	m := d.buf[:total]
	if _, err := io.ReadFull(d.r, m[preludeLen:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Message{}, err
	}
	if crc32.Checksum(m[:total-4], table) != binary.BigEndian.Uint32(m[total-4:]) {
		return Message{}, ErrMessageCRC
	}
	return d.parse(m, hlen)
}

// Decode reads one whole message from b (exactly one), for tests and the
// mock; its slices point into b.
func Decode(b []byte) (Message, error) {
	d := &Decoder{}
	if len(b) < minMessageLen {
		return Message{}, ErrLength
	}
	total := binary.BigEndian.Uint32(b[0:4])
	hlen := binary.BigEndian.Uint32(b[4:8])
	if crc32.Checksum(b[:8], table) != binary.BigEndian.Uint32(b[8:12]) {
		return Message{}, ErrPreludeCRC
	}
	if int(total) != len(b) || total > MaxMessageLen || hlen > MaxHeadersLen || hlen > total-minMessageLen {
		return Message{}, ErrLength
	}
	if crc32.Checksum(b[:total-4], table) != binary.BigEndian.Uint32(b[total-4:]) {
		return Message{}, ErrMessageCRC
	}
	return d.parse(b, hlen)
}

func (d *Decoder) parse(m []byte, hlen uint32) (Message, error) {
	hs, err := parseHeaders(m[preludeLen:preludeLen+hlen], d.hs[:0])
	d.hs = hs
	if err != nil {
		return Message{}, err
	}
	return Message{Headers: hs, Payload: m[preludeLen+hlen : len(m)-4]}, nil
}

func parseHeaders(b []byte, hs []Header) ([]Header, error) {
	for len(b) > 0 {
		n := int(b[0])
		if n == 0 || len(b) < 1+n+1 {
			return hs, ErrHeaders
		}
		h := Header{Name: headerName(b[1 : 1+n]), Type: b[1+n]}
		b = b[2+n:]
		size := fixedSize(h.Type)
		switch {
		case h.Type > TypeUUID:
			return hs, fmt.Errorf("%w: unknown value type %d", ErrHeaders, h.Type)
		case size < 0:
			if len(b) < 2 {
				return hs, ErrHeaders
			}
			size = int(binary.BigEndian.Uint16(b))
			b = b[2:]
		}
		if len(b) < size {
			return hs, ErrHeaders
		}
		h.Value = b[:size:size]
		b = b[size:]
		hs = append(hs, h)
	}
	return hs, nil
}

// headerName is a header's name, without an allocation for the names
// every Bedrock message carries.
func headerName(b []byte) string {
	for _, n := range [...]string{":event-type", ":content-type", ":message-type", ":exception-type"} {
		if string(b) == n {
			return n
		}
	}
	return string(b)
}

// fixedSize is the size of a value of type t, -1 for the types that carry
// their length (bytes, string) and for unknown types.
func fixedSize(t byte) int {
	switch t {
	case TypeTrue, TypeFalse:
		return 0
	case TypeByte:
		return 1
	case TypeInt16:
		return 2
	case TypeInt32:
		return 4
	case TypeInt64, TypeTimestamp:
		return 8
	case TypeUUID:
		return 16
	}
	return -1
}

// StringHeader is a string-typed header.
func StringHeader(name, value string) Header {
	return Header{Name: name, Type: TypeString, Value: []byte(value)}
}

// Append appends m, framed, to dst. A header name or value past the
// format's limits is an error.
func Append(dst []byte, m Message) ([]byte, error) {
	hlen := 0
	for _, h := range m.Headers {
		if len(h.Name) == 0 || len(h.Name) > maxHeaderName || len(h.Value) > maxHeaderValue {
			return dst, ErrHeaders
		}
		if fixed := fixedSize(h.Type); fixed >= 0 && len(h.Value) != fixed {
			return dst, ErrHeaders
		}
		hlen += 2 + len(h.Name) + len(h.Value)
		if h.Type == TypeBytes || h.Type == TypeString {
			hlen += 2
		}
	}
	total := preludeLen + hlen + len(m.Payload) + 4
	if total > MaxMessageLen || hlen > MaxHeadersLen {
		return dst, ErrLength
	}
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, uint32(total))
	dst = binary.BigEndian.AppendUint32(dst, uint32(hlen))
	dst = binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:start+8], table))
	for _, h := range m.Headers {
		dst = append(dst, byte(len(h.Name)))
		dst = append(dst, h.Name...)
		dst = append(dst, h.Type)
		if h.Type == TypeBytes || h.Type == TypeString {
			dst = binary.BigEndian.AppendUint16(dst, uint16(len(h.Value)))
		}
		dst = append(dst, h.Value...)
	}
	dst = append(dst, m.Payload...)
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:], table)), nil
}
