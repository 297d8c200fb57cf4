package wire

import (
	"bytes"
)

// Usage is the token count of one request, normalised across shapes.
// Input counts every prompt token, cached or not; CacheRead and CacheWrite
// are the parts of Input read from and written to the provider's prompt
// cache. Output counts every generated token; Reasoning is the part of
// Output spent on reasoning.
type Usage struct {
	Input      int64
	Output     int64
	CacheRead  int64
	CacheWrite int64
	Reasoning  int64
}

// Units is what a request used that a binding may bill per unit rather
// than per token: images generated (of a size and quality, as asked) and
// milliseconds of audio (as the upstream reported them).
type Units struct {
	Images  int64
	Size    string
	Quality string
	Millis  int64
}

// IsZero reports whether no token was counted.
func (u Usage) IsZero() bool { return u == Usage{} }

// anthropicUsage keeps Anthropic's own fields, because message_delta
// overwrites them one by one and input_tokens excludes the cache.
type anthropicUsage struct {
	input, output, cacheRead, cacheWrite, thinking int64
}

func (a *anthropicUsage) merge(obj []byte) {
	set := func(dst *int64, path ...string) {
		if v, ok := GetInt(obj, path...); ok {
			*dst = v
		}
	}
	set(&a.input, "input_tokens")
	set(&a.output, "output_tokens")
	set(&a.cacheRead, "cache_read_input_tokens")
	set(&a.cacheWrite, "cache_creation_input_tokens")
	set(&a.thinking, "output_tokens_details", "thinking_tokens")
}

func (a *anthropicUsage) usage() Usage {
	return Usage{
		Input:      a.input + a.cacheRead + a.cacheWrite,
		Output:     a.output,
		CacheRead:  a.cacheRead,
		CacheWrite: a.cacheWrite,
		Reasoning:  a.thinking,
	}
}

// ParseUsage reads a usage object in the given upstream shape: OpenAI
// (chat and embeddings), Responses or Anthropic.
func ParseUsage(shape Shape, obj []byte) Usage {
	get := func(path ...string) int64 { n, _ := GetInt(obj, path...); return n }
	switch shape {
	case ShapeOpenAI:
		if _, ok := GetInt(obj, "prompt_tokens"); !ok {
			if _, ok := GetInt(obj, "input_tokens"); ok {
				// The images and audio endpoints count tokens as the
				// Responses API does (gpt-image-1, gpt-4o-transcribe).
				return Usage{Input: get("input_tokens"), Output: get("output_tokens"), CacheRead: get("input_tokens_details", "cached_tokens")}
			}
		}
		return Usage{
			Input:      get("prompt_tokens"),
			Output:     get("completion_tokens"),
			CacheRead:  get("prompt_tokens_details", "cached_tokens"),
			CacheWrite: get("prompt_tokens_details", "cache_write_tokens"),
			Reasoning:  get("completion_tokens_details", "reasoning_tokens"),
		}
	case ShapeOpenAIResponses:
		return Usage{
			Input:      get("input_tokens"),
			Output:     get("output_tokens"),
			CacheRead:  get("input_tokens_details", "cached_tokens"),
			CacheWrite: get("input_tokens_details", "cache_write_tokens"),
			Reasoning:  get("output_tokens_details", "reasoning_tokens"),
		}
	case ShapeAnthropic:
		var a anthropicUsage
		a.merge(obj)
		return a.usage()
	case ShapeGemini:
		return Usage{
			Input:     get("promptTokenCount"),
			Output:    get("candidatesTokenCount") + get("thoughtsTokenCount"),
			CacheRead: get("cachedContentTokenCount"),
			Reasoning: get("thoughtsTokenCount"),
		}
	}
	return Usage{}
}

// StreamTracker reads usage out of an upstream SSE stream as its events go
// by, and notices the events that matter to the proxy: OpenAI's usage-only
// chunk and each shape's terminal event.
type StreamTracker struct {
	shape    Shape
	usage    Usage
	anth     anthropicUsage
	seen     bool
	terminal bool
	errored  bool  // the upstream sent its own in-stream error
	seq      int64 // the last Responses sequence_number
}

// NewStreamTracker returns a tracker for a stream in the given upstream shape.
func NewStreamTracker(shape Shape) StreamTracker { return StreamTracker{shape: shape} }

// Observe reads one event. It reports whether the event is an OpenAI chat
// chunk that carries only usage ("choices":[]), which the proxy holds back
// from a caller that did not ask for it.
func (t *StreamTracker) Observe(ev Event) (usageOnly bool) {
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 {
		return false
	}
	switch t.shape {
	case ShapeOpenAI:
		if string(data) == "[DONE]" {
			t.terminal = true
			return false
		}
		if data[0] == '{' && bytes.Contains(data, []byte(`"error"`)) {
			if _, ok := Get(data, "error"); ok {
				t.terminal, t.errored = true, true
				return false
			}
		}
		u, ok := Get(data, "usage")
		if !ok || len(u) == 0 || u[0] != '{' {
			return false
		}
		t.usage, t.seen = ParseUsage(ShapeOpenAI, u), true
		choices, ok := Get(data, "choices")
		return ok && isEmptyArray(choices)
	case ShapeOpenAIResponses:
		if n, ok := GetInt(data, "sequence_number"); ok {
			t.seq = n
		}
		typ := eventType(ev.Name, data)
		switch string(typ) {
		case "response.completed", "response.incomplete", "response.failed":
			t.terminal = true
			if u, ok := Get(data, "response", "usage"); ok && len(u) > 0 && u[0] == '{' {
				t.usage, t.seen = ParseUsage(ShapeOpenAIResponses, u), true
			}
		case "error":
			t.terminal, t.errored = true, true
		}
		if string(typ) == "response.failed" {
			t.errored = true
		}
	case ShapeAnthropic:
		switch string(eventType(ev.Name, data)) {
		case "message_start":
			if u, ok := Get(data, "message", "usage"); ok && len(u) > 0 && u[0] == '{' {
				t.anth.merge(u)
				t.usage, t.seen = t.anth.usage(), true
			}
		case "message_delta":
			if u, ok := Get(data, "usage"); ok && len(u) > 0 && u[0] == '{' {
				t.anth.merge(u)
				t.usage, t.seen = t.anth.usage(), true
			}
		case "message_stop":
			t.terminal = true
		case "error":
			t.terminal, t.errored = true, true
		}
	case ShapeGemini:
		if u, ok := Get(data, "usageMetadata"); ok && len(u) > 0 && u[0] == '{' {
			t.usage, t.seen = ParseUsage(ShapeGemini, u), true
		}
	}
	return false
}

// Usage returns the usage seen so far and whether any was.
func (t *StreamTracker) Usage() (Usage, bool) { return t.usage, t.seen }

// Terminal reports whether the stream's terminal event went by: [DONE] for
// chat, message_stop or error for Anthropic, response.completed, .incomplete,
// .failed or error for Responses. Gemini streams have none.
func (t *StreamTracker) Terminal() bool { return t.terminal || t.shape == ShapeGemini }

// Errored reports whether the upstream put its own error into the stream.
func (t *StreamTracker) Errored() bool { return t.errored }

// NextSeq is the sequence number an event appended to a Responses stream
// should carry.
func (t *StreamTracker) NextSeq() int64 { return t.seq + 1 }

// eventType is the SSE event name, else the data's "type".
func eventType(name, data []byte) []byte {
	if len(name) > 0 {
		return name
	}
	if v, ok := Get(data, "type"); ok {
		if s, ok := Str(v); ok {
			return s
		}
	}
	return nil
}

func isEmptyArray(v []byte) bool {
	if len(v) < 2 || v[0] != '[' || v[len(v)-1] != ']' {
		return false
	}
	return len(bytes.TrimSpace(v[1:len(v)-1])) == 0
}

// BodyUsage picks the top-level "usage" (or "usageMetadata") member out of a JSON body fed to it
// in pieces, as it streams by, without holding the body.
type BodyUsage struct {
	depth     int
	inStr     bool
	esc       bool
	state     captureState
	key       [13]byte // the first bytes of the key being read
	keyLen    int      // its full length
	match     bool     // the current member is "usage"
	capturing bool
	container bool // the captured value is an object or array
	captured  []byte
	done      []byte // the last complete usage value
	limit     int
}

type captureState uint8

const (
	stKey     captureState = iota // at depth 1, expecting a key
	stColon                       // after the key, before ':'
	stValue                       // after ':', before the value
	stInValue                     // inside a value
)

// NewBodyUsage returns a capture that keeps at most limit bytes of the
// usage value.
func NewBodyUsage(limit int) BodyUsage { return BodyUsage{limit: limit} }

// Reset readies c for another body, keeping its buffers.
func (c *BodyUsage) Reset(limit int) {
	*c = BodyUsage{limit: limit, captured: c.captured[:0], done: c.done[:0]}
}

// Write feeds the next piece of the body. It never fails.
func (c *BodyUsage) Write(p []byte) (int, error) {
	for _, b := range p {
		c.step(b)
	}
	return len(p), nil
}

func (c *BodyUsage) step(b byte) {
	if c.capturing {
		if len(c.captured) < c.limit {
			c.captured = append(c.captured, b)
		}
	}
	if c.inStr {
		switch {
		case c.esc:
			c.esc = false
		case b == '\\':
			c.esc = true
		case b == '"':
			c.inStr = false
			if c.depth == 1 && c.state == stKey {
				// "usage", or Gemini's "usageMetadata".
				c.match = c.keyLen == 5 && string(c.key[:5]) == "usage" || c.keyLen == 13 && string(c.key[:13]) == "usageMetadata"
				c.state = stColon
			}
		default:
			if c.depth == 1 && c.state == stKey {
				if c.keyLen < len(c.key) {
					c.key[c.keyLen] = b
				}
				c.keyLen++
			}
		}
		if !c.inStr && c.capturing && !c.container && c.depth == 1 {
			c.finish()
		}
		return
	}
	if isWS(b) {
		if c.capturing && !c.container && c.depth == 1 && len(c.captured) > 0 {
			c.captured = c.captured[:len(c.captured)-1]
		}
		return
	}
	if c.depth == 1 && c.state == stValue {
		c.state = stInValue
		if c.match {
			c.capturing = true
			c.container = b == '{' || b == '['
			c.captured = append(c.captured[:0], b)
		}
	}
	switch b {
	case '"':
		c.inStr = true
		if c.depth == 1 && c.state == stKey {
			c.keyLen = 0
		}
	case '{', '[':
		c.depth++
	case '}', ']':
		c.depth--
		if c.capturing && c.container && c.depth == 1 {
			c.finish()
		} else if c.capturing && !c.container && c.depth == 0 {
			c.captured = c.captured[:len(c.captured)-1]
			c.finish()
		}
	case ':':
		if c.depth == 1 && c.state == stColon {
			c.state = stValue
		}
	case ',':
		if c.depth == 1 {
			if c.capturing {
				c.captured = c.captured[:len(c.captured)-1]
				c.finish()
			}
			c.state = stKey
		}
	}
}

func (c *BodyUsage) finish() {
	c.capturing = false
	c.match = false
	if len(c.captured) < c.limit {
		c.done = append(c.done[:0], c.captured...)
	}
}

// Value returns the raw top-level usage value, if one was read whole.
func (c *BodyUsage) Value() ([]byte, bool) { return c.done, len(c.done) > 0 }
