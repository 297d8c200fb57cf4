package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds nesting so a hostile body cannot exhaust the stack.
const maxDepth = 512

// SyntaxError is a malformed JSON body.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("malformed JSON at byte %d: %s", e.Offset, e.Msg)
}

func syntaxErr(off int, msg string) error { return &SyntaxError{Offset: off, Msg: msg} }

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipWS returns the index of the first non-whitespace byte at or after i.
func skipWS(b []byte, i int) int {
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return i
}

// skipValue validates the JSON value that starts at b[i] and returns the
// index just past it.
func skipValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return i, syntaxErr(i, "unexpected end of input")
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '{':
		return skipObject(b, i, depth+1)
	case c == '[':
		return skipArray(b, i, depth+1)
	case c == 't':
		return skipLiteral(b, i, "true")
	case c == 'f':
		return skipLiteral(b, i, "false")
	case c == 'n':
		return skipLiteral(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return skipNumber(b, i)
	}
	return i, syntaxErr(i, fmt.Sprintf("unexpected character %q", b[i]))
}

func skipLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, syntaxErr(i, "invalid literal")
	}
	return i + len(lit), nil
}

func skipNumber(b []byte, i int) (int, error) {
	start := i
	if b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if digits() == 0 {
		return i, syntaxErr(start, "invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return i, syntaxErr(start, "invalid number")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return i, syntaxErr(start, "invalid number")
		}
	}
	return i, nil
}

// skipString validates the string that starts at b[i] (a quote).
func skipString(b []byte, i int) (int, error) {
	start := i
	i++
	for i < len(b) {
		// Eight plain bytes at a time: most of a prompt is text with no
		// quote, backslash or control character in it.
		for i+8 <= len(b) && !mayEndRun(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			if i+1 >= len(b) {
				return i, syntaxErr(start, "unterminated string")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return i, syntaxErr(i, "invalid unicode escape")
				}
				i += 6
			default:
				return i, syntaxErr(i, "invalid escape")
			}
		case c < 0x20:
			return i, syntaxErr(i, "control character in string")
		default:
			i++
		}
	}
	return len(b), syntaxErr(start, "unterminated string")
}

// SWAR constants: every byte 0x01, every byte 0x80.
const (
	swarOnes  = 0x0101010101010101
	swarHighs = 0x8080808080808080
)

// mayEndRun reports whether one of the eight bytes of w (read little
// endian) may be a quote, a backslash or a control character. It never
// misses one; a false alarm only sends the scan a byte at a time past it.
func mayEndRun(w uint64) bool {
	quote := w ^ (swarOnes * '"')
	slash := w ^ (swarOnes * '\\')
	control := (w - swarOnes*0x20) &^ w // a byte below 0x20
	return (swarZero(quote)|swarZero(slash)|control)&swarHighs != 0
}

// swarZero has a byte's high bit set where x may hold a zero byte.
func swarZero(x uint64) uint64 { return (x - swarOnes) &^ x }

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func skipObject(b []byte, i, depth int) (int, error) {
	if depth > maxDepth {
		return i, syntaxErr(i, "nesting too deep")
	}
	return eachMember(b, i, depth, nil)
}

func skipArray(b []byte, i, depth int) (int, error) {
	if depth > maxDepth {
		return i, syntaxErr(i, "nesting too deep")
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		if i, err = skipValue(b, i, depth); err != nil {
			return i, err
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return i, syntaxErr(i, "unterminated array")
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case ']':
			return i + 1, nil
		default:
			return i, syntaxErr(i, "expected ',' or ']'")
		}
	}
}

// eachMember walks the members of the object at b[i], calling fn (if not
// nil) with each raw key (without quotes, escapes kept) and the span of its
// value, and returns the index just past the object. fn returns false to
// stop early; the index returned is then -1. Every value walked is validated.
func eachMember(b []byte, i, depth int, fn func(key []byte, vstart, vend int) bool) (int, error) {
	if i >= len(b) || b[i] != '{' {
		return i, syntaxErr(i, "expected an object")
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, syntaxErr(i, "expected a string key")
		}
		kend, err := skipString(b, i)
		if err != nil {
			return i, err
		}
		key := b[i+1 : kend-1]
		i = skipWS(b, kend)
		if i >= len(b) || b[i] != ':' {
			return i, syntaxErr(i, "expected ':'")
		}
		vstart := skipWS(b, i+1)
		vend, err := skipValue(b, vstart, depth)
		if err != nil {
			return vend, err
		}
		if fn != nil && !fn(key, vstart, vend) {
			return -1, nil
		}
		i = skipWS(b, vend)
		if i >= len(b) {
			return i, syntaxErr(i, "unterminated object")
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			return i + 1, nil
		default:
			return i, syntaxErr(i, "expected ',' or '}'")
		}
	}
}

// nextRune decodes the rune at raw[i] of a validated string's contents
// (quotes stripped) and returns it with the index just past it, as
// encoding/json decodes: an escape is unescaped, a surrogate pair joined,
// and an invalid byte or a lone surrogate becomes U+FFFD, which bad reports.
func nextRune(raw []byte, i int) (r rune, next int, bad bool) {
	c := raw[i]
	if c < utf8.RuneSelf && c != '\\' {
		return rune(c), i + 1, false
	}
	if c != '\\' {
		r, n := utf8.DecodeRune(raw[i:])
		return r, i + n, r == utf8.RuneError && n == 1
	}
	switch raw[i+1] {
	case 'b':
		return '\b', i + 2, false
	case 'f':
		return '\f', i + 2, false
	case 'n':
		return '\n', i + 2, false
	case 'r':
		return '\r', i + 2, false
	case 't':
		return '\t', i + 2, false
	case 'u':
		r = hex4(raw[i+2:])
		i += 6
		if !utf16.IsSurrogate(r) {
			return r, i, false
		}
		if len(raw)-i >= 6 && raw[i] == '\\' && raw[i+1] == 'u' {
			if pair := utf16.DecodeRune(r, hex4(raw[i+2:])); pair != unicode.ReplacementChar {
				return pair, i + 6, false
			}
		}
		return unicode.ReplacementChar, i, true
	}
	return rune(raw[i+1]), i + 2, false // '"', '\\' or '/'
}

// unescape decodes a validated string's contents (quotes stripped) as
// encoding/json does; bad reports an invalid byte or a lone surrogate.
func unescape(raw []byte) (s string, bad bool) {
	b := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		var r rune
		var badRune bool
		r, i, badRune = nextRune(raw, i)
		bad = bad || badRune
		b = utf8.AppendRune(b, r)
	}
	return string(b), bad
}

// hex4 reads the four hex digits skipString has validated.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// plainKey reports whether a raw key decodes to itself and has no letter a
// case-insensitive decoder could fold onto a lower-case ASCII name: no
// escape, no upper case, nothing outside ASCII.
func plainKey(raw []byte) bool {
	for _, c := range raw {
		if c == '\\' || c >= utf8.RuneSelf || (c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// matchKey compares a raw key (quotes stripped, escapes kept) with an ASCII
// name. exact: the key decodes to name, as encoding/json decodes member
// names. folded: it does only when letter case is ignored the way
// encoding/json matches struct fields, by Unicode simple folding ("Model",
// "\u017Ftream" for "stream"), as upstreams written in Go do. It does not
// allocate.
func matchKey(raw []byte, name string) (exact, folded bool) {
	exact = true
	j := 0
	for i := 0; i < len(raw); j++ {
		var r rune
		r, i, _ = nextRune(raw, i)
		if j >= len(name) {
			return false, false
		}
		if c := rune(name[j]); r != c {
			if !foldsTo(r, c) {
				return false, false
			}
			exact = false
		}
	}
	if j != len(name) {
		return false, false
	}
	return exact, !exact
}

// foldsTo reports whether r is in the simple case-folding orbit of c.
func foldsTo(r, c rune) bool {
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f == c {
			return true
		}
	}
	return false
}

// Get returns the raw value at the path of object keys inside data, e.g.
// Get(chunk, "usage", "prompt_tokens"). It validates only what it walks
// over and does not allocate.
func Get(data []byte, path ...string) ([]byte, bool) {
	v := bytes.TrimSpace(data) // cheap: a subslice
	for _, key := range path {
		var found []byte
		ok := false
		_, err := eachMember(v, 0, 1, func(k []byte, s, e int) bool {
			if string(k) == key {
				found, ok = v[s:e], true // last one wins, like encoding/json
			}
			return true
		})
		if err != nil || !ok {
			return nil, false
		}
		v = found
	}
	return v, true
}

// Int parses a JSON integer value; null, absent or malformed give false.
func Int(v []byte) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	neg := false
	i := 0
	if v[0] == '-' {
		neg = true
		i++
	}
	if i >= len(v) {
		return 0, false
	}
	var n int64
	for ; i < len(v); i++ {
		c := v[i]
		if c == '.' || c == 'e' || c == 'E' { // a float: keep the integer part
			break
		}
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (1<<62)/10 {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// GetInt is Get followed by Int.
func GetInt(data []byte, path ...string) (int64, bool) {
	v, ok := Get(data, path...)
	if !ok {
		return 0, false
	}
	return Int(v)
}

// Str returns the contents of a JSON string value without unescaping, and
// whether v was a string.
func Str(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return nil, false
	}
	return v[1 : len(v)-1], true
}

// AppendString appends s as a JSON string literal.
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
