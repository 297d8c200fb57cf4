package wire

import (
	"github.com/cespare/xxhash/v2"
)

// RouteFacts is what routing reads from a request body beyond the model:
// the caller's session identity (for prompt-cache affinity), a hash of the
// stable prefix of the prompt (the identity of last resort), what the
// request needs of a model, and a route hint. Every []byte is a span of the
// body it was scanned from, escapes kept.
type RouteFacts struct {
	// Session is the caller's own session identity: the raw value of the
	// first of prompt_cache_key, metadata.user_id, conversation (a string,
	// or the object's "id") and previous_response_id that is a non-empty
	// string; SessionFrom names the member.
	Session     []byte
	SessionFrom string
	// Prefix hashes the stable prefix: the system prompt (system,
	// instructions, systemInstruction), the tool definitions and the first
	// message (or input item); 0 when the body has none of them.
	Prefix uint64
	// Tools: tools (or functions) is a non-empty array.
	Tools bool
	// Images counts the image parts of the messages (image_url, image,
	// input_image, Gemini inlineData/fileData of an image type), and
	// MediaBytes is their size in the body, which a token estimate must
	// not count as text.
	Images     int
	MediaBytes int
	// JSONSchema: the request asks for structured output
	// (response_format or text.format of type json_schema or json_object,
	// Anthropic's output_format, Gemini's responseSchema).
	JSONSchema bool
	// Hint is the raw value of metadata.relay_route, when it is a string.
	Hint []byte
}

// The top-level members ScanRoute decides on. A duplicate (or a case
// variant) of one of them is refused, as ScanRequest refuses its own.
const (
	rmTools = iota
	rmFunctions
	rmResponseFormat
	rmText
	rmOutputFormat
	rmMetadata
	rmPromptCacheKey
	rmConversation
	rmPreviousResponseID
	rmGenerationConfig
	// Read for the prefix and images only: duplicates are left to the
	// upstream, as they decide nothing.
	rmSystem
	rmInstructions
	rmSystemInstruction
	rmMessages
	rmInput
	rmContents
)

// nDecided is how many of the members come first and are decided on.
const nDecided = rmSystem

// routeMembers names them. Read only.
var routeMembers = [...]string{
	"tools", "functions", "response_format", "text", "output_format", "metadata",
	"prompt_cache_key", "conversation", "previous_response_id", "generationConfig",
	"system", "instructions", "systemInstruction", "messages", "input", "contents",
}

func routeMember(key []byte) (i int, folded bool) {
	for i, name := range routeMembers {
		if string(key) == name {
			return i, false
		}
	}
	for i, name := range routeMembers[:nDecided] {
		if exact, folded := matchKey(key, name); exact || folded {
			return i, folded
		}
	}
	return -1, false
}

// ScanRoute reads a request body's RouteFacts. body must have passed
// ScanRequest (or be a Gemini body that is one JSON object). It does not
// allocate. A member it decides on that appears twice, or under a name
// that differs from it only in case, fails the scan with an *Error of kind
// ErrMalformedRequest, as ScanRequest's members do.
func ScanRoute(body []byte) (RouteFacts, error) {
	var f RouteFacts
	i := skipWS(body, 0)
	var spans [len(routeMembers)][2]int
	var seen uint32
	var refused *Error
	_, err := eachMember(body, i, 1, func(key []byte, s, e int) bool {
		m, folded := routeMember(key)
		if m < 0 {
			return true
		}
		if m < nDecided && refused == nil {
			refused = checkMember(key, routeMembers[m], folded, seen&(1<<m) != 0)
		}
		if folded {
			return true
		}
		seen |= 1 << m
		spans[m] = [2]int{s, e}
		return true
	})
	if err != nil {
		return f, err
	}
	if refused != nil {
		return f, refused
	}
	val := func(m int) []byte {
		if seen&(1<<m) == 0 {
			return nil
		}
		return body[spans[m][0]:spans[m][1]]
	}
	f.Tools = nonEmptyArray(val(rmTools)) || nonEmptyArray(val(rmFunctions))
	f.JSONSchema = structured(val(rmResponseFormat)) || len(val(rmOutputFormat)) > 0 && string(val(rmOutputFormat)) != "null"
	if t := val(rmText); len(t) > 0 && t[0] == '{' {
		if v, ok := Get(t, "format"); ok {
			f.JSONSchema = f.JSONSchema || structured(v)
		}
	}
	if g := val(rmGenerationConfig); len(g) > 0 && g[0] == '{' {
		for _, k := range [...]string{"responseSchema", "responseJsonSchema", "response_schema"} {
			if v, ok := Get(g, k); ok && string(v) != "null" {
				f.JSONSchema = true
			}
		}
	}
	meta := val(rmMetadata)
	if len(meta) > 0 && meta[0] == '{' {
		if v, ok := Get(meta, "relay_route"); ok {
			f.Hint, _ = Str(v)
		}
	}
	// The session identity, first present wins.
	session := func(v []byte, from string) {
		if f.Session != nil {
			return
		}
		if s, ok := Str(v); ok && len(s) > 0 {
			f.Session, f.SessionFrom = s, from
		}
	}
	session(val(rmPromptCacheKey), "prompt_cache_key")
	if len(meta) > 0 && meta[0] == '{' {
		if v, ok := Get(meta, "user_id"); ok {
			session(v, "metadata.user_id")
		}
	}
	if c := val(rmConversation); len(c) > 0 && c[0] == '{' {
		if v, ok := Get(c, "id"); ok {
			session(v, "conversation")
		}
	} else {
		session(c, "conversation")
	}
	session(val(rmPreviousResponseID), "previous_response_id")

	// The stable prefix: system, tools, first message.
	var sep = [1]byte{0}
	var d xxhash.Digest
	d.Reset()
	some := false
	add := func(v []byte) {
		if len(v) > 0 {
			some = true
			_, _ = d.Write(v)
			_, _ = d.Write(sep[:])
		}
	}
	add(val(rmSystem))
	add(val(rmInstructions))
	add(val(rmSystemInstruction))
	add(val(rmTools))
	add(val(rmFunctions))
	for _, m := range [...]int{rmMessages, rmInput, rmContents} {
		v := val(m)
		if len(v) == 0 {
			continue
		}
		if v[0] == '"' { // Responses input as one string
			add(v)
			continue
		}
		first := true
		_ = eachElement(v, func(s, e int) {
			if first {
				add(v[s:e])
				first = false
			}
			f.scanParts(v[s:e])
		})
	}
	if some {
		f.Prefix = d.Sum64()
	}
	return f, nil
}

// scanParts counts the image parts of one message (or input item, or
// Gemini content).
func (f *RouteFacts) scanParts(msg []byte) {
	if len(msg) == 0 || msg[0] != '{' {
		return
	}
	parts, ok := Get(msg, "content")
	if !ok {
		if parts, ok = Get(msg, "parts"); !ok {
			// A Responses input item may be the part itself.
			f.scanPart(msg)
			return
		}
	}
	_ = eachElement(parts, func(s, e int) { f.scanPart(parts[s:e]) })
}

func (f *RouteFacts) scanPart(p []byte) {
	if len(p) == 0 || p[0] != '{' {
		return
	}
	if t, ok := Get(p, "type"); ok {
		switch string(t) {
		case `"image_url"`, `"image"`, `"input_image"`:
			f.Images++
			f.MediaBytes += len(p)
		}
		return
	}
	for _, k := range [...]string{"inlineData", "inline_data", "fileData", "file_data"} {
		if v, ok := Get(p, k); ok {
			if mt, ok := Get(v, "mimeType"); ok && len(mt) > 7 && string(mt[1:7]) == "image/" {
				f.Images++
				f.MediaBytes += len(p)
			}
		}
	}
}

// EstimatedPromptTokens is a prompt-token estimate of a body of size
// bytes with these facts: four bytes a token for text, and a flat 1,000
// per image whatever its encoded size (providers bill images by pixels,
// not by base64 bytes).
func (f *RouteFacts) EstimatedPromptTokens(size int) int64 {
	text := max(size-f.MediaBytes, 0)
	return int64(text+3)/4 + int64(f.Images)*1000
}

// eachElement calls fn with the span of each element of the array v; a
// value that is not an array calls nothing.
func eachElement(v []byte, fn func(s, e int)) error {
	if len(v) == 0 || v[0] != '[' {
		return nil
	}
	i := skipWS(v, 1)
	if i < len(v) && v[i] == ']' {
		return nil
	}
	for i < len(v) {
		e, err := skipValue(v, i, 2)
		if err != nil {
			return err
		}
		fn(i, e)
		i = skipWS(v, e)
		if i >= len(v) || v[i] != ',' {
			return nil
		}
		i = skipWS(v, i+1)
	}
	return nil
}

func nonEmptyArray(v []byte) bool {
	if len(v) == 0 || v[0] != '[' {
		return false
	}
	i := skipWS(v, 1)
	return i < len(v) && v[i] != ']'
}

// structured reports whether a response_format (or text.format) asks for
// JSON output.
func structured(v []byte) bool {
	if len(v) == 0 || v[0] != '{' {
		return false
	}
	t, ok := Get(v, "type")
	return ok && (string(t) == `"json_schema"` || string(t) == `"json_object"`)
}
