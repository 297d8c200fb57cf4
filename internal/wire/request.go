package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Errors a request body can fail the scan with. Both are the caller's
// fault and become 400 invalid_request.
var (
	ErrNotObject    = errors.New("request body is not a JSON object")
	ErrMissingModel = errors.New(`request body has no "model" string`)
)

// Request is what routing needs from a request body, found by one pass of a
// top-level scanner: nothing is decoded but the model name.
type Request struct {
	Model string
	// Stream is true when "stream" is the literal true.
	Stream bool
	// IncludeUsage is true when "stream_options.include_usage" is the literal true.
	IncludeUsage bool
	// Size is the body's length in bytes.
	Size int
	// MaxTokens is the largest of max_tokens, max_completion_tokens and
	// max_output_tokens when one is a non-negative integer, else 0: the
	// limiter's output-token estimate.
	MaxTokens int64

	modelStart, modelEnd int // the model value, quotes included
	optsStart, optsEnd   int // the stream_options value; -1 when absent
	optsEmpty            bool
	usageStart, usageEnd int // stream_options.include_usage value; -1 when absent
	end                  int // index of the root object's closing brace
}

// ScanRequest validates body as one JSON object and reads the members
// routing needs. Duplicate keys resolve like encoding/json: the last wins.
func ScanRequest(body []byte) (Request, error) {
	r := Request{Size: len(body), modelStart: -1, optsStart: -1, optsEnd: -1, usageStart: -1, usageEnd: -1}
	i := skipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return r, ErrNotObject
	}
	var streamVal []byte
	end, err := eachMember(body, i, 1, func(key []byte, s, e int) bool {
		switch string(key) {
		case "model":
			r.modelStart, r.modelEnd = s, e
		case "stream":
			streamVal = body[s:e]
		case "stream_options":
			r.optsStart, r.optsEnd = s, e
		case "max_tokens", "max_completion_tokens", "max_output_tokens":
			if n, ok := Int(body[s:e]); ok && n > r.MaxTokens {
				r.MaxTokens = n
			}
		}
		return true
	})
	if err != nil {
		return r, fmt.Errorf("scan request body: %w", err)
	}
	if j := skipWS(body, end); j != len(body) {
		return r, fmt.Errorf("scan request body: %w", syntaxErr(j, "data after the top-level object"))
	}
	r.end = end - 1
	r.Stream = string(streamVal) == "true"
	if r.optsStart >= 0 && body[r.optsStart] == '{' {
		opts := body[r.optsStart:r.optsEnd]
		r.optsEmpty = true
		_, _ = eachMember(opts, 0, 2, func(key []byte, s, e int) bool {
			r.optsEmpty = false
			if string(key) == "include_usage" {
				r.usageStart, r.usageEnd = r.optsStart+s, r.optsStart+e
			}
			return true
		})
		r.IncludeUsage = r.usageStart >= 0 && string(body[r.usageStart:r.usageEnd]) == "true"
	}
	if r.modelStart < 0 || body[r.modelStart] != '"' || r.modelEnd-r.modelStart < 3 {
		return r, ErrMissingModel
	}
	raw := body[r.modelStart+1 : r.modelEnd-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		r.Model = string(raw)
	} else if err := json.Unmarshal(body[r.modelStart:r.modelEnd], &r.Model); err != nil || r.Model == "" {
		return r, ErrMissingModel
	}
	return r, nil
}

// Rewrite is how the upstream body differs from the caller's.
type Rewrite struct {
	// Model replaces the model value when it differs from the caller's.
	Model string
	// IncludeUsage forces stream_options.include_usage to true.
	IncludeUsage bool
}

// edit replaces body[start:end] with text.
type edit struct {
	start, end int
	text       string
	quote      bool // text goes out as a JSON string literal
}

// NeedsRewrite reports whether rw changes the body r was scanned from.
func (r *Request) NeedsRewrite(rw Rewrite) bool {
	return (rw.Model != "" && rw.Model != r.Model) || (rw.IncludeUsage && !r.IncludeUsage)
}

// AppendRewritten appends body with rw applied to dst, splicing bytes: every
// byte outside the edited values is copied verbatim. r must be the result
// of ScanRequest(body).
func AppendRewritten(dst, body []byte, r *Request, rw Rewrite) []byte {
	var edits [2]edit
	n := 0
	if rw.Model != "" && rw.Model != r.Model {
		edits[n] = edit{start: r.modelStart, end: r.modelEnd, text: rw.Model, quote: true}
		n++
	}
	if rw.IncludeUsage && !r.IncludeUsage {
		switch {
		case r.optsStart < 0:
			edits[n] = edit{start: r.end, end: r.end, text: `,"stream_options":{"include_usage":true}`}
		case body[r.optsStart] != '{':
			edits[n] = edit{start: r.optsStart, end: r.optsEnd, text: `{"include_usage":true}`}
		case r.usageStart >= 0:
			edits[n] = edit{start: r.usageStart, end: r.usageEnd, text: `true`}
		case r.optsEmpty:
			edits[n] = edit{start: r.optsStart + 1, end: r.optsStart + 1, text: `"include_usage":true`}
		default:
			edits[n] = edit{start: r.optsStart + 1, end: r.optsStart + 1, text: `"include_usage":true,`}
		}
		n++
	}
	if n == 2 && edits[1].start < edits[0].start {
		edits[0], edits[1] = edits[1], edits[0]
	}
	at := 0
	for _, e := range edits[:n] {
		dst = append(dst, body[at:e.start]...)
		if e.quote {
			dst = AppendString(dst, e.text)
		} else {
			dst = append(dst, e.text...)
		}
		at = e.end
	}
	return append(dst, body[at:]...)
}
