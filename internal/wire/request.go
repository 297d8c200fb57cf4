package wire

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
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
	// max_output_tokens that is a non-negative number (rounded up, capped
	// at MaxTokenLimit), else 0: the limiter's output-token estimate.
	MaxTokens int64
	// ModelInPath: Model and Stream are the URL path's (Call.Scan of a
	// Gemini call), not the body's: the upstream path names the model too.
	ModelInPath bool

	modelStart, modelEnd int  // the model value, quotes included
	modelEscaped         bool // the model value holds an escape
	optsStart, optsEnd   int  // the stream_options value; -1 when absent
	optsEmpty            bool
	usageStart, usageEnd int       // stream_options.include_usage value; -1 when absent
	end                  int       // index of the root object's closing brace
	route                routeWalk // ScanRoute's members, from the same walk
}

// Route returns body's RouteFacts, as ScanRoute does, from the walk
// ScanRequest made of it: body must be the one r was scanned from. A
// Request that did not walk a whole body walks it now.
func (r *Request) Route(body []byte) (RouteFacts, error) {
	if !r.route.done || r.Size != len(body) {
		return ScanRoute(body)
	}
	return r.route.facts(body)
}

// MaxTokenLimit caps Request.MaxTokens.
const MaxTokenLimit = 1 << 62

// The top-level members of a request body Relay decides on.
const (
	memModel = iota
	memStream
	memStreamOptions
	memMaxTokens
	memMaxCompletionTokens
	memMaxOutputTokens
)

// requestMembers names them. Read only.
var requestMembers = [...]string{"model", "stream", "stream_options", "max_tokens", "max_completion_tokens", "max_output_tokens"}

// requestMember returns the index in requestMembers of the member a raw
// top-level key names, or -1; folded is set when the key names it only
// when case is ignored.
func requestMember(key []byte) (i int, folded bool) {
	for i, name := range requestMembers {
		if string(key) == name {
			return i, false
		}
	}
	if plainKey(key) {
		return -1, false // the common case: a member Relay does not read
	}
	for i, name := range requestMembers {
		if exact, folded := matchKey(key, name); exact || folded {
			return i, folded
		}
	}
	return -1, false
}

// ScanRequest validates body as one JSON object and reads the members
// routing needs. Member names are compared unescaped, as the upstream's
// decoder compares them. A member Relay reads that appears twice (or under
// a name that differs from it only in case, which some decoders take for
// it), and a stream flag that is not a boolean, fail the scan with an
// *Error of kind ErrMalformedRequest naming the member: otherwise Relay
// could decide on one value while the upstream acts on another. Duplicates
// of members Relay does not read are left for the upstream to judge.
func ScanRequest(body []byte) (Request, error) {
	r := Request{Size: len(body), modelStart: -1, optsStart: -1, optsEnd: -1, usageStart: -1, usageEnd: -1}
	i := skipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return r, ErrNotObject
	}
	var streamVal []byte
	var seen uint
	var refused *Error
	r.route.start()
	r.route.open = i
	end, err := eachMember(body, i, 1, func(key []byte, s, e int) bool {
		r.route.member(key, s, e)
		m, folded := requestMember(key)
		if m < 0 {
			return true
		}
		if refused == nil {
			refused = checkMember(key, requestMembers[m], folded, seen&(1<<m) != 0)
		}
		seen |= 1 << m
		switch m {
		case memModel:
			r.modelStart, r.modelEnd = s, e
		case memStream:
			streamVal = body[s:e]
		case memStreamOptions:
			r.optsStart, r.optsEnd = s, e
		default:
			if n, ok := tokenLimit(body[s:e]); ok && n > r.MaxTokens {
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
	r.route.done = true
	if refused != nil {
		return r, refused
	}
	r.end = end - 1
	if r.Stream, err = flag(streamVal, "stream"); err != nil {
		return r, err
	}
	if r.optsStart >= 0 && body[r.optsStart] == '{' {
		if err := r.scanStreamOptions(body); err != nil {
			return r, err
		}
	}
	return r, r.scanModel(body)
}

// scanStreamOptions reads include_usage from the stream_options object.
func (r *Request) scanStreamOptions(body []byte) error {
	const name = "include_usage"
	opts := body[r.optsStart:r.optsEnd]
	r.optsEmpty = true
	var refused *Error
	_, _ = eachMember(opts, 0, 2, func(key []byte, s, e int) bool {
		r.optsEmpty = false
		exact, folded := string(key) == name, false
		if !exact && !plainKey(key) {
			exact, folded = matchKey(key, name)
		}
		if !exact && !folded {
			return true
		}
		if refused == nil {
			refused = checkMember(key, "stream_options."+name, folded, r.usageStart >= 0)
		}
		r.usageStart, r.usageEnd = r.optsStart+s, r.optsStart+e
		return true
	})
	if refused != nil {
		return refused
	}
	var err error
	if r.usageStart >= 0 {
		r.IncludeUsage, err = flag(body[r.usageStart:r.usageEnd], "stream_options.include_usage")
	}
	return err
}

// scanModel decodes the model string. What Relay routes on must be what
// any decoder reads, so a model that is not valid UTF-8 (or holds a lone
// surrogate escape, which decoders turn into different things) is refused.
func (r *Request) scanModel(body []byte) error {
	if r.modelStart < 0 || body[r.modelStart] != '"' || r.modelEnd-r.modelStart < 3 {
		return ErrMissingModel
	}
	raw := body[r.modelStart+1 : r.modelEnd-1]
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		r.Model = string(raw)
		return nil
	}
	m, bad := unescape(raw)
	if bad {
		return &Error{Kind: ErrMalformedRequest, Msg: `The "model" string is not valid UTF-8.`, Param: "model"}
	}
	if m == "" {
		return ErrMissingModel
	}
	r.Model, r.modelEscaped = m, true
	return nil
}

// checkMember returns the refusal of a member Relay reads that is a
// duplicate or a case variant, else nil.
func checkMember(key []byte, name string, folded, duplicate bool) *Error {
	switch {
	case folded:
		k, _ := unescape(key)
		return &Error{Kind: ErrMalformedRequest, Param: name,
			Msg: "Member " + strconv.Quote(k) + " in request body differs from " + strconv.Quote(name) + " only in case; send it once, as " + strconv.Quote(name) + "."}
	case duplicate:
		return &Error{Kind: ErrMalformedRequest, Param: name,
			Msg: "Duplicate member " + strconv.Quote(name) + " in request body; send it once."}
	}
	return nil
}

// flag reads a boolean member Relay decides on: only the literal true is
// true; false, null and absent are false; anything else is refused, since
// a lenient upstream would take "true" or 1 for true.
func flag(v []byte, name string) (bool, error) {
	switch string(v) {
	case "true":
		return true, nil
	case "", "false", "null":
		return false, nil
	}
	return false, &Error{Kind: ErrMalformedRequest, Param: name, Msg: strconv.Quote(name) + " must be true or false."}
}

// tokenLimit reads a max-tokens value as the limiter's estimate: a
// non-negative number, rounded up and capped at MaxTokenLimit. Anything
// else (a string, null, a negative number) sets no limit.
func tokenLimit(v []byte) (int64, bool) {
	if len(v) == 0 || v[0] < '0' || v[0] > '9' {
		return 0, false
	}
	if !bytes.ContainsAny(v, ".eE") {
		if n, ok := Int(v); ok {
			return min(n, MaxTokenLimit), true
		}
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	if f >= MaxTokenLimit {
		return MaxTokenLimit, true
	}
	return int64(math.Ceil(f)), true
}

// Rewrite is how the upstream body differs from the caller's.
type Rewrite struct {
	// Model replaces the model value when it differs from the caller's
	// (or the caller's holds an escape).
	Model string
	// IncludeUsage forces stream_options.include_usage to true.
	IncludeUsage bool
	// Drop is cut out: RouteFacts.HintCut, Relay's own route hint. It
	// must not overlap the model or stream_options values.
	Drop Cut
}

// edit replaces body[start:end] with text.
type edit struct {
	start, end int
	text       string
	quote      bool // text goes out as a JSON string literal
}

// NeedsRewrite reports whether rw changes the body r was scanned from.
func (r *Request) NeedsRewrite(rw Rewrite) bool {
	return r.splicesModel(rw) || (rw.IncludeUsage && !r.IncludeUsage) || !rw.Drop.Empty()
}

// splicesModel reports whether rw's model replaces the caller's: when it
// differs, and when the caller spelled it with escapes, so the upstream
// reads the model Relay priced in plain bytes.
func (r *Request) splicesModel(rw Rewrite) bool {
	return rw.Model != "" && (rw.Model != r.Model || r.modelEscaped)
}

// AppendRewritten appends body with rw applied to dst, splicing bytes: every
// byte outside the edited values is copied verbatim. r must be the result
// of ScanRequest(body).
func AppendRewritten(dst, body []byte, r *Request, rw Rewrite) []byte {
	var edits [3]edit
	n := 0
	if r.splicesModel(rw) {
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
	if !rw.Drop.Empty() {
		edits[n] = edit{start: rw.Drop.Start, end: rw.Drop.End}
		n++
	}
	for i := 1; i < n; i++ { // in body order
		for j := i; j > 0 && edits[j].start < edits[j-1].start; j-- {
			edits[j], edits[j-1] = edits[j-1], edits[j]
		}
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
