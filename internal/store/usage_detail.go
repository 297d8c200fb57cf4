package store

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// A routing decision kept in full is stored deflated in route_detail_z
// (migration 00020): one version byte, then raw deflate primed with
// detailDict, a decision's own keys and common values. Decisions are small
// (about a kilobyte of JSON) and alike, so the dictionary does most of the
// work: a three-candidate decision packs to a quarter of its JSON.
const detailVersion = 1

// detailDict holds what routing decisions repeat (internal/routing's
// Detail), the likeliest last: deflate reaches back from the end.
const detailDict = `"hint_ignored":"hint":"panic":true,"why":"keys_not_granted":["keys_disabled":["keys_unusable":["keys_held":["dropped_fallbacks":[` +
	`"skip":"budget_fallback":"degraded":"tools":true,"images":true,"structured":true,` +
	`"shape":"anthropic","shape":"gemini","shape":"openai_responses","fallback":1,` +
	`{"model":"","strategy":"ordered","strategy_from":"default","affinity":"prompt_cache_key","session_from":"prompt_cache_key",` +
	`"needs":{"prompt_tokens":,"max_output":1024},"candidates":[{"binding_id":"","host":"","model":"","upstream_model":"",` +
	`"shape":"openai","position":0,"score":1,"keys":["",""],"affinity":true},{"binding_id":"","host":"","model":"",` +
	`"upstream_model":"","shape":"openai","position":1,"score":0.5,"keys":[""]}],` +
	`"chosen":{"binding_id":"","host":"","model":"","host_key":"","slot":0,"affinity":"miss"}}`

// detailLevel is deflate's: below 5 Go's deflate does not match into the
// dictionary, and above it packs a decision no smaller.
const detailLevel = 5

// maxDetail bounds what unpackDetail inflates: a decision is kilobytes, so
// anything larger is not one.
const maxDetail = 1 << 20

var detailWriters = sync.Pool{New: func() any {
	w, err := flate.NewWriterDict(nil, detailLevel, []byte(detailDict))
	if err != nil {
		panic(err) // only for a bad level
	}
	return w
}}

// packDetail is route_detail_z for a decision: nil for none.
func packDetail(d json.RawMessage) []byte {
	if len(d) == 0 {
		return nil
	}
	var buf bytes.Buffer
	buf.Grow(len(d)/2 + 16)
	buf.WriteByte(detailVersion)
	w := detailWriters.Get().(*flate.Writer)
	w.Reset(&buf)
	_, _ = w.Write(d) // a bytes.Buffer does not fail
	_ = w.Close()
	detailWriters.Put(w)
	return buf.Bytes()
}

var errBadDetail = errors.New("stored routing decision is not readable")

// unpackDetail inverts packDetail; z is what Postgres holds, so a bad one
// is an error, not a panic.
func unpackDetail(z []byte) (json.RawMessage, error) {
	if len(z) == 0 {
		return nil, nil
	}
	if z[0] != detailVersion {
		return nil, fmt.Errorf("%w: version %d", errBadDetail, z[0])
	}
	r := flate.NewReaderDict(bytes.NewReader(z[1:]), []byte(detailDict))
	defer r.Close()
	d, err := io.ReadAll(io.LimitReader(r, maxDetail+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %w", errBadDetail, err)
	case len(d) > maxDetail:
		return nil, fmt.Errorf("%w: larger than %d bytes", errBadDetail, maxDetail)
	}
	return d, nil
}

// readDetail turns a row read from the ledger into what callers see: the
// decision in RouteDetail whichever column holds it, RouteDetailZ nil. A
// decision that does not inflate is dropped (the row is still the event).
func readDetail(e *UsageEvent) {
	if e.RouteDetailZ == nil {
		return
	}
	if d, err := unpackDetail(e.RouteDetailZ); err == nil {
		e.RouteDetail = d
	}
	e.RouteDetailZ = nil
}
