package usage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store"
)

// The journal's record: one ledger row in a compact binary form, framed so
// that a reader can tell a whole record from a torn or damaged one:
//
//	u32 length of the body (little endian) | u32 CRC-32C of the body | body
//
// and the body is rowVersion followed by the row's fields in a fixed order
// (varints, length-prefixed strings, presence-flagged identifiers). No
// reflection and no allocation: encoding a row costs a few hundred
// nanoseconds, against microseconds for JSON.
const (
	rowVersion  = 1
	frameHeader = 8
	// maxRecord bounds one record's body: far above any real row (the
	// route detail is the only large field), low enough that a damaged
	// length cannot make a reader allocate much.
	maxRecord = 1 << 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// errBadRecord is a record that is torn, damaged or not one Relay wrote.
var errBadRecord = errors.New("bad usage record")

// appendRecord appends r, framed, to b.
func appendRecord(b []byte, r *store.UsageEvent) []byte {
	start := len(b)
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0) // the frame header, filled in below
	b = appendRow(b, r)
	body := b[start+frameHeader:]
	binary.LittleEndian.PutUint32(b[start:], uint32(len(body)))
	binary.LittleEndian.PutUint32(b[start+4:], crc32.Checksum(body, crcTable))
	return b
}

// nextRecord splits the first record off data: its body and the rest. A
// short, oversized or damaged record is errBadRecord (a reader stops there:
// what follows a torn write is not to be trusted).
func nextRecord(data []byte) (body, rest []byte, err error) {
	if len(data) < frameHeader {
		return nil, nil, errBadRecord
	}
	n := binary.LittleEndian.Uint32(data)
	if n > maxRecord || uint64(len(data)-frameHeader) < uint64(n) {
		return nil, nil, errBadRecord
	}
	body = data[frameHeader : frameHeader+int(n)]
	if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(data[4:]) {
		return nil, nil, errBadRecord
	}
	return body, data[frameHeader+int(n):], nil
}

func appendRow(b []byte, r *store.UsageEvent) []byte {
	b = append(b, rowVersion)
	b = appendString(b, r.RequestID)
	b = binary.AppendVarint(b, r.CreatedAt.UnixNano())
	for _, id := range [...]*uuid.UUID{r.RelayKeyID, r.InferenceTokenID, r.ServiceAccountID, r.UserID,
		r.ProjectID, r.TeamID, r.PolicyID, r.BindingID, r.HostID, r.HostKeyID} {
		b = appendID(b, id)
	}
	b = appendString(b, r.Model)
	b = appendString(b, r.InboundShape)
	b = appendString(b, r.UpstreamShape)
	if r.Stream {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	for _, v := range [...]int64{int64(r.Status), int64(r.Attempts), r.InputTokens, r.OutputTokens,
		r.CachedReadTokens, r.CacheWriteTokens, r.ReasoningTokens, r.Cost, r.Saved,
		int64(r.TTFBMs), int64(r.TotalMs), int64(r.OverheadUs)} {
		b = binary.AppendVarint(b, v)
	}
	b = appendString(b, r.ErrorKind)
	b = appendOptString(b, r.ClientRequestID)
	b = appendOptString(b, r.Route)
	// 0: no detail; else its length + 1.
	if r.RouteDetail == nil {
		b = append(b, 0)
	} else {
		b = binary.AppendUvarint(b, uint64(len(r.RouteDetail))+1)
		b = append(b, r.RouteDetail...)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendOptString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	return appendString(b, *s)
}

func appendID(b []byte, id *uuid.UUID) []byte {
	if id == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	return append(b, id[:]...)
}

// rowReader decodes a record body; the first error sticks.
type rowReader struct {
	b   []byte
	err error
}

func (d *rowReader) fail() {
	d.err = errBadRecord
	d.b = nil
}

func (d *rowReader) byte() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *rowReader) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *rowReader) int32() int32 {
	v := d.varint()
	if v != int64(int32(v)) {
		d.fail()
		return 0
	}
	return int32(v)
}

func (d *rowReader) bytes() []byte {
	n, k := binary.Uvarint(d.b)
	if k <= 0 || n > uint64(len(d.b)-k) {
		d.fail()
		return nil
	}
	v := d.b[k : k+int(n)]
	d.b = d.b[k+int(n):]
	return v
}

func (d *rowReader) string() string { return string(d.bytes()) }

func (d *rowReader) flag() bool {
	switch d.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail()
	return false
}

func (d *rowReader) optString() *string {
	if !d.flag() {
		return nil
	}
	s := d.string()
	return &s
}

func (d *rowReader) id() *uuid.UUID {
	if !d.flag() {
		return nil
	}
	if len(d.b) < 16 {
		d.fail()
		return nil
	}
	var id uuid.UUID
	copy(id[:], d.b)
	d.b = d.b[16:]
	return &id
}

// decodeRow decodes a record body appendRow wrote.
func decodeRow(body []byte) (store.UsageEvent, error) {
	d := rowReader{b: body}
	var r store.UsageEvent
	if d.byte() != rowVersion {
		return store.UsageEvent{}, errBadRecord
	}
	r.RequestID = d.string()
	r.CreatedAt = time.Unix(0, d.varint()).UTC()
	for _, p := range [...]**uuid.UUID{&r.RelayKeyID, &r.InferenceTokenID, &r.ServiceAccountID, &r.UserID,
		&r.ProjectID, &r.TeamID, &r.PolicyID, &r.BindingID, &r.HostID, &r.HostKeyID} {
		*p = d.id()
	}
	r.Model = d.string()
	r.InboundShape = d.string()
	r.UpstreamShape = d.string()
	r.Stream = d.flag()
	r.Status = d.int32()
	r.Attempts = d.int32()
	for _, p := range [...]*int64{&r.InputTokens, &r.OutputTokens, &r.CachedReadTokens, &r.CacheWriteTokens,
		&r.ReasoningTokens, &r.Cost, &r.Saved} {
		*p = d.varint()
	}
	r.TTFBMs = d.int32()
	r.TotalMs = d.int32()
	r.OverheadUs = d.int32()
	r.ErrorKind = d.string()
	r.ClientRequestID = d.optString()
	r.Route = d.optString()
	if n, k := binary.Uvarint(d.b); d.err == nil && k > 0 && n > 0 && n-1 <= uint64(len(d.b)-k) {
		r.RouteDetail = bytes.Clone(d.b[k : k+int(n-1)])
		d.b = d.b[k+int(n-1):]
	} else if d.err == nil && k == 1 && n == 0 {
		d.b = d.b[1:]
	} else {
		d.fail()
	}
	if d.err != nil || len(d.b) != 0 {
		return store.UsageEvent{}, errBadRecord
	}
	return r, nil
}
