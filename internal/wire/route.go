package wire

import (
	"bytes"

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
	// HintCut removes metadata.relay_route (whatever its value) from the
	// body, and metadata with it when the hint was its only member: the
	// hint is Relay's, not the upstream's. Empty when there is none.
	HintCut Cut
}

// The top-level members ScanRoute reads. A duplicate of one of them
// (under any of its spellings) or a case variant is refused, as
// ScanRequest refuses its own: the system prompt and the messages decide
// the images a model must see and the prompt-token estimate, so they are
// decided on too.
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
	rmSystem
	rmInstructions
	rmSystemInstruction
	rmMessages
	rmInput
	rmContents
	nRouteMembers
)

// routeMembers spells them; Gemini's take their proto names too. Read only.
var routeMembers = []spelling{
	{"tools", rmTools}, {"functions", rmFunctions}, {"response_format", rmResponseFormat},
	{"text", rmText}, {"output_format", rmOutputFormat}, {"metadata", rmMetadata},
	{"prompt_cache_key", rmPromptCacheKey}, {"conversation", rmConversation},
	{"previous_response_id", rmPreviousResponseID},
	{"generationConfig", rmGenerationConfig}, {"generation_config", rmGenerationConfig},
	{"system", rmSystem}, {"instructions", rmInstructions},
	{"systemInstruction", rmSystemInstruction}, {"system_instruction", rmSystemInstruction},
	{"messages", rmMessages}, {"input", rmInput}, {"contents", rmContents},
}

// Nested members ScanRoute reads, each with its spellings. Read only.
var (
	typeMember   = []spelling{{"type", 0}}
	formatMember = []spelling{{"format", 0}}
	userIDMember = []spelling{{"user_id", 0}}
	idMember     = []spelling{{"id", 0}}
)

// ScanRoute reads a request body's RouteFacts. body must have passed
// ScanRequest (or be a Gemini body that is one JSON object). It does not
// allocate unless it refuses. A member it reads that appears twice (under
// any of its spellings), or under a name that differs from it only in
// case, fails the scan with an *Error of kind ErrMalformedRequest, as
// ScanRequest's members do; so do the members it reads inside them
// (metadata.user_id, response_format.type, generationConfig's …).
func ScanRoute(body []byte) (RouteFacts, error) {
	var w routeWalk
	w.start()
	w.open = skipWS(body, 0)
	if _, err := eachMember(body, w.open, 1, w.member); err != nil {
		return RouteFacts{}, err
	}
	return w.facts(body)
}

// routeWalk collects, member by member of one walk of the root object,
// what ScanRoute reads: ScanRequest's walk feeds one too, so a body the
// proxy scans is walked once (Request.Route).
type routeWalk struct {
	spans   [nRouteMembers][2]int
	seen    uint32
	refused *Error
	open    int // the root object's opening brace
	// prev is the end of the previous member's value; metaPrev the one
	// before metadata (-1: none), which the hint's cut needs.
	prev, metaPrev int
	done           bool // the walk reached the end of the root object
}

func (w *routeWalk) start() { w.prev, w.metaPrev = -1, -1 }

// member takes one top-level member of the walk: its raw key and the span
// of its value.
func (w *routeWalk) member(key []byte, s, e int) bool {
	m, folded := spelledBy(key, routeMembers)
	p := w.prev
	w.prev = e
	if m < 0 {
		return true
	}
	if dup := w.seen&(1<<m) != 0; w.refused == nil && (folded || dup) {
		w.refused = checkMember(key, firstSpelling(routeMembers, m), folded, dup)
	}
	w.seen |= 1 << m
	w.spans[m] = [2]int{s, e}
	if m == rmMetadata {
		w.metaPrev = p
	}
	return true
}

// facts reads the RouteFacts of body from a finished walk of it.
func (w *routeWalk) facts(body []byte) (RouteFacts, error) {
	var f RouteFacts
	if w.refused != nil {
		return f, w.refused
	}
	i, spans, seen, metaPrev := w.open, &w.spans, w.seen, w.metaPrev
	val := func(m int) []byte {
		if seen&(1<<m) == 0 {
			return nil
		}
		return body[spans[m][0]:spans[m][1]]
	}
	f.Tools = nonEmptyArray(val(rmTools)) || nonEmptyArray(val(rmFunctions))
	var rerr *Error
	if f.JSONSchema, rerr = structured(val(rmResponseFormat), "response_format."); rerr != nil {
		return f, rerr
	}
	f.JSONSchema = f.JSONSchema || len(val(rmOutputFormat)) > 0 && string(val(rmOutputFormat)) != "null"
	if t := val(rmText); len(t) > 0 && t[0] == '{' {
		v, rerr := uniqueMember(t, 2, "text.", formatMember)
		if rerr != nil {
			return f, rerr
		}
		s, rerr := structured(v, "text.format.")
		if rerr != nil {
			return f, rerr
		}
		f.JSONSchema = f.JSONSchema || s
	}
	if _, schema, rerr := scanGenerationConfig(val(rmGenerationConfig)); rerr != nil {
		return f, rerr
	} else if schema {
		f.JSONSchema = true
	}
	meta := val(rmMetadata)
	if len(meta) > 0 && meta[0] == '{' {
		if refused := f.scanHint(body, i, metaPrev, spans[rmMetadata][0]); refused != nil {
			return f, refused
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
		v, rerr := uniqueMember(meta, 2, "metadata.", userIDMember)
		if rerr != nil {
			return f, rerr
		}
		session(v, "metadata.user_id")
	}
	if c := val(rmConversation); len(c) > 0 && c[0] == '{' {
		v, rerr := uniqueMember(c, 2, "conversation.", idMember)
		if rerr != nil {
			return f, rerr
		}
		session(v, "conversation")
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
		// The first message is part of the prefix; image parts are looked
		// for only where one could be: a cheap search spares text-only
		// requests a walk of every message.
		if i := skipWS(v, 1); i < len(v) && v[i] != ']' {
			if e, err := skipValue(v, i, 2); err == nil {
				add(v[i:e])
			}
		}
		if mayHoldMedia(v) {
			_ = eachElement(v, func(s, e int) { f.scanParts(v[s:e]) })
		}
	}
	if some {
		f.Prefix = d.Sum64()
	}
	return f, nil
}

// scanParts counts the image parts of one message (or input item, or
// Gemini content), walking the message once and each part once.
func (f *RouteFacts) scanParts(msg []byte) {
	if len(msg) == 0 || msg[0] != '{' {
		return
	}
	var parts []byte
	typed := false
	_, _ = eachMember(msg, 0, 2, func(key []byte, s, e int) bool {
		switch {
		case keyIs(key, "content"), keyIs(key, "parts"):
			parts = msg[s:e]
		case keyIs(key, "type"):
			typed = true
		}
		return true
	})
	switch {
	case len(parts) > 0 && parts[0] == '[':
		f.eachPart(parts)
	case parts == nil && typed:
		f.partAt(msg, 0) // a Responses input item may be the part itself
	}
}

// eachPart counts the image parts of a content array.
func (f *RouteFacts) eachPart(arr []byte) {
	i := skipWS(arr, 1)
	for i < len(arr) && arr[i] != ']' {
		var e int
		if arr[i] == '{' {
			e = f.partAt(arr, i)
		} else {
			var err error
			if e, err = skipValue(arr, i, 3); err != nil {
				return
			}
		}
		i = skipWS(arr, e)
		if i >= len(arr) || arr[i] != ',' {
			return
		}
		i = skipWS(arr, i+1)
	}
}

// partAt counts the part that starts at b[i] if it is an image, and
// returns the index just past it.
func (f *RouteFacts) partAt(b []byte, i int) int {
	image := false
	end, err := eachMember(b, i, 3, func(key []byte, s, e int) bool {
		v := b[s:e]
		switch {
		case keyIs(key, "type"):
			if stringIs(v, "image_url", "image", "input_image") {
				image = true
			}
		case keyIs(key, "inlineData"), keyIs(key, "inline_data"), keyIs(key, "fileData"), keyIs(key, "file_data"):
			_, _ = eachMember(v, 0, 4, func(k []byte, s, e int) bool {
				if keyIs(k, "mimeType") || keyIs(k, "mime_type") {
					if mt := v[s:e]; len(mt) > 7 && (string(mt[1:7]) == "image/" || bytes.IndexByte(mt, '\\') >= 0) {
						image = true
					}
				}
				return true
			})
		}
		return true
	})
	if err != nil {
		return len(b)
	}
	if image {
		f.Images++
		f.MediaBytes += end - i
	}
	return end
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

// mayHoldMedia reports whether v could hold an image part: every one is
// typed "image_url", "image" or "input_image", or holds inlineData,
// inline_data, fileData or file_data. The searches start at a quote or an
// underscore, which prose rarely holds, so they run at memory speed.
func mayHoldMedia(v []byte) bool {
	for _, s := range [...]string{`"image`, `_image"`, `Data"`, `_data"`} {
		if bytes.Contains(v, []byte(s)) {
			return true
		}
	}
	return false
}

// nonEmptyArray reports whether v is an array with an element.
func nonEmptyArray(v []byte) bool {
	if len(v) == 0 || v[0] != '[' {
		return false
	}
	i := skipWS(v, 1)
	return i < len(v) && v[i] != ']'
}

// structured reports whether a response_format (or text.format) asks for
// JSON output; a duplicate type is refused, prefix naming where it is.
func structured(v []byte, prefix string) (bool, *Error) {
	t, err := uniqueMember(v, 3, prefix, typeMember)
	if err != nil {
		return false, err
	}
	return stringIs(t, "json_schema", "json_object"), nil
}
