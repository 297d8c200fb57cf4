package translator

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// Helpers every shape shares: strict decoding with errors that name the
// field, tool-call id mapping, argument normalisation, data URIs, and
// reading any provider's error body.

// decodeStrict unmarshals a caller's body into v, refusing fields the
// hand-written types do not know: a field Relay would drop is a 400, never
// a silent loss.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bodyError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return &wire.Error{Kind: wire.ErrMalformedRequest, Msg: "The request body holds data after its JSON object."}
	}
	return nil
}

// bodyError turns a decoding error into a caller-facing 400.
func bodyError(err error) error {
	var we *wire.Error
	if errors.As(err, &we) {
		return we
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "body"
		}
		return &wire.Error{Kind: wire.ErrMalformedRequest, Param: field,
			Msg: fmt.Sprintf("Invalid type for %q: expected %s, got a JSON %s.", field, jsonKind(te.Type.String()), te.Value)}
	}
	if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
		field, _ := strconv.Unquote(strings.TrimPrefix(msg, "json: unknown field "))
		return &wire.Error{Kind: wire.ErrUnsupportedFeature, Param: field,
			Msg: fmt.Sprintf("The field %q is not one Relay can translate to another shape; send it only to a model bound in the caller's own shape.", field)}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &wire.Error{Kind: wire.ErrMalformedRequest, Msg: fmt.Sprintf("Could not parse the request body: malformed JSON at byte %d.", se.Offset)}
	}
	return &wire.Error{Kind: wire.ErrMalformedRequest, Msg: "Could not parse the request body: " + err.Error() + "."}
}

func jsonKind(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "a boolean"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "float"):
		return "a number"
	}
	return "an object"
}

// badField is a 400 for a malformed value of field.
func badField(field, format string, args ...any) error {
	return &wire.Error{Kind: wire.ErrMalformedRequest, Param: field, Msg: fmt.Sprintf("Invalid %q: ", field) + fmt.Sprintf(format, args...) + "."}
}

// unsupported is a 400 for a field no binding of another shape can take.
func unsupported(field, why string) error {
	msg := fmt.Sprintf("The field %q cannot be translated to another shape", field)
	if why != "" {
		msg += ": " + why
	}
	return &wire.Error{Kind: wire.ErrUnsupportedFeature, Param: field, Msg: msg + "."}
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// --- tool-call ids ---
//
// Ids must survive a round trip through the caller: the id a caller sees on
// a tool call comes back on the next request, as the call in the assistant
// turn and as the result's reference, and must then mean the same call to
// the upstream. Each caller shape gets its own prefix (call_ for Chat,
// toolu_ for Messages) put in front of the upstream's id; an id that comes
// back with that prefix in front of a recognisable upstream id loses it
// again. Gemini's ids are synthesized (see gemini_helper.go) and carry the
// call's thought signature.

const (
	chatCallPrefix      = "call_"
	anthropicCallPrefix = "toolu_"
)

// callerID is the id a caller sees for an upstream call id.
func callerID(prefix, id string) string {
	if strings.HasPrefix(id, prefix) {
		return id
	}
	return prefix + id
}

// canonicalID is the upstream id behind an id a caller sent back: the
// caller's prefix comes off when what follows is another shape's id.
func canonicalID(prefix, id string) string {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok {
		return id
	}
	for _, p := range []string{chatCallPrefix, anthropicCallPrefix, geminiIDPrefix} {
		if strings.HasPrefix(rest, p) && p != prefix {
			return rest
		}
	}
	return id
}

// anthropicID makes id acceptable to Anthropic (^[a-zA-Z0-9_-]+$). Ids
// that already are pass unchanged; others map, deterministically, to a
// hash, so a call and its result keep matching.
func anthropicID(id string) string {
	ok := id != ""
	for i := 0; i < len(id) && ok; i++ {
		c := id[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
	}
	if ok && len(id) <= 256 {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "toolu_rx" + hex.EncodeToString(sum[:12])
}

// openaiID keeps an id within OpenAI's 40 characters: longer ones (Relay's
// Gemini ids carry signatures) map, deterministically, to a hash, so a
// call and its result keep matching.
func openaiID(id string) string {
	if len(id) <= 40 {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "call_rx" + hex.EncodeToString(sum[:16])
}

// --- arguments ---

// argsObject turns a tool call's argument text into the JSON object
// Anthropic and Gemini want: "" (a call without arguments) is {}; anything
// that is not one JSON object is refused.
func argsObject(args string) (json.RawMessage, bool) {
	s := strings.TrimSpace(args)
	if s == "" {
		return json.RawMessage("{}"), true
	}
	if s[0] != '{' || !json.Valid([]byte(s)) {
		return nil, false
	}
	return json.RawMessage(s), true
}

// argsText is the argument string Chat and Responses want for an object
// the upstream sent: compact JSON, {} when there was none.
func argsText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}"
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// --- media ---

// parseDataURI splits data:<media type>;base64,<data>.
func parseDataURI(uri string) (mediaType, data string, ok bool) {
	rest, ok := strings.CutPrefix(uri, "data:")
	if !ok {
		return "", "", false
	}
	meta, data, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "", false
	}
	mediaType, enc, _ := strings.Cut(meta, ";")
	if enc != "base64" || mediaType == "" {
		return "", "", false
	}
	return mediaType, data, true
}

func dataURI(mediaType, data string) string { return "data:" + mediaType + ";base64," + data }

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// unb64 decodes standard base64, giving s back when it is not.
func unb64(s string) string {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return s
	}
	return string(b)
}

// --- upstream errors ---

// upstreamError reads any provider's error body: OpenAI and Gemini put
// {"error":{message,…}} at the top, Anthropic {"type":"error","error":{type,
// message}}. The status is kept: the caller's SDK decides on it.
func upstreamError(status int, body []byte) *canonical.Error {
	var b struct {
		Error json.RawMessage `json:"error"`
		Msg   string          `json:"message"`
	}
	e := &canonical.Error{Kind: canonical.KindForStatus(status), Status: status}
	if json.Unmarshal(body, &b) == nil {
		var inner struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
			Status  string          `json:"status"`
			Param   *string         `json:"param"`
		}
		if json.Unmarshal(b.Error, &inner) == nil {
			e.Message = inner.Message
			e.Code = inner.Status
			if e.Code == "" {
				var s string
				if json.Unmarshal(inner.Code, &s) == nil {
					e.Code = s
				}
			}
			if e.Code == "" {
				e.Code = inner.Type
			}
			if inner.Param != nil {
				e.Param = *inner.Param
			}
		} else if s := ""; json.Unmarshal(b.Error, &s) == nil {
			e.Message = s
		}
		if e.Message == "" {
			e.Message = b.Msg
		}
	}
	if e.Message == "" {
		e.Message = fmt.Sprintf("The upstream answered %d.", status)
	}
	return e
}

// streamErrorOf is an in-stream error whose type or status the upstream
// named: the kind follows the type when it is known, else the status.
func streamErrorOf(typ string, status int, msg string) *canonical.Error {
	k := canonical.KindForStatus(status)
	switch typ {
	case "invalid_request_error", "invalid_request", "INVALID_ARGUMENT", "FAILED_PRECONDITION", "invalid_prompt":
		k = canonical.ErrInvalidRequest
	case "authentication_error", "UNAUTHENTICATED":
		k = canonical.ErrAuthentication
	case "permission_error", "PERMISSION_DENIED":
		k = canonical.ErrPermission
	case "not_found_error", "NOT_FOUND":
		k = canonical.ErrNotFound
	case "rate_limit_error", "rate_limit_exceeded", "RESOURCE_EXHAUSTED", "insufficient_quota":
		k = canonical.ErrRateLimit
	case "overloaded_error", "UNAVAILABLE", "server_is_overloaded":
		k = canonical.ErrOverloaded
	case "timeout_error", "DEADLINE_EXCEEDED":
		k = canonical.ErrTimeout
	case "api_error", "server_error", "INTERNAL":
		k = canonical.ErrServer
	}
	if status == 0 {
		status = canonical.StatusForKind(k)
	}
	if msg == "" {
		msg = "The upstream reported an error in the stream."
	}
	return &canonical.Error{Kind: k, Status: status, Message: msg, Code: typ}
}

// eventType is the SSE event name, else the data's "type".
func eventType(ev *wire.Event) string {
	if len(ev.Name) > 0 {
		return string(ev.Name)
	}
	if v, ok := wire.Get(ev.Data, "type"); ok {
		if s, ok := wire.Str(v); ok {
			return string(s)
		}
	}
	return ""
}

func appendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

// toolChoiceMode reads a tool_choice given as a bare mode, as OpenAI's
// shapes allow ("auto", "none", "required"); ok is false when raw is not a
// string, and the caller reads its object form.
func toolChoiceMode(raw json.RawMessage, tc *canonical.ToolChoice) (ok bool, err error) {
	var mode string
	if json.Unmarshal(raw, &mode) != nil {
		return false, nil
	}
	switch m := canonical.ToolChoiceMode(mode); m {
	case canonical.ToolChoiceAuto, canonical.ToolChoiceNone, canonical.ToolChoiceRequired:
		tc.Mode = m
		return true, nil
	}
	return true, badField("tool_choice", "unknown mode %q", mode)
}

// textContent reads content given as a bare JSON string, as every shape
// allows for text: ok is false when raw (trimmed, not empty) is not a
// string.
func textContent(raw json.RawMessage, at string) (s string, ok bool, err error) {
	if raw[0] != '"' {
		return "", false, nil
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", true, badField(at, "malformed string")
	}
	return s, true, nil
}
