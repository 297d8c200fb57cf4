package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkScanDifferential holds ScanRequest to encoding/json, the decoder an
// upstream is assumed to share (member names unescaped, the last duplicate
// wins): every value the scan extracts is the one encoding/json extracts,
// or the scan refuses the body for a reason the reference confirms.
// Rewriting the body must leave everything else as encoding/json saw it.
func checkScanDifferential(t testing.TB, body []byte) {
	t.Helper()
	r, err := ScanRequest(body)
	var obj map[string]json.RawMessage
	if jsonErr := json.Unmarshal(body, &obj); jsonErr != nil {
		if err == nil {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		return
	}
	if obj == nil { // a top-level null decodes into a nil map
		if !errors.Is(err, ErrNotObject) {
			t.Fatalf("%q: err = %v, want ErrNotObject", body, err)
		}
		return
	}
	must, may := ambiguous(body, obj)
	if err != nil {
		checkRefusal(t, body, obj, may, err)
		return
	}
	if len(must) > 0 {
		t.Fatalf("accepted %q, which is ambiguous in %v", body, must)
	}
	var model string
	if json.Unmarshal(obj["model"], &model) != nil || model != r.Model || model == "" {
		t.Fatalf("%q: model %q, encoding/json reads %s", body, r.Model, obj["model"])
	}
	if r.Stream != (string(obj["stream"]) == "true") {
		t.Fatalf("%q: stream %v, encoding/json reads %s", body, r.Stream, obj["stream"])
	}
	var opts map[string]json.RawMessage
	_ = json.Unmarshal(obj["stream_options"], &opts)
	if r.IncludeUsage != (string(opts["include_usage"]) == "true") {
		t.Fatalf("%q: include_usage %v, encoding/json reads %s", body, r.IncludeUsage, opts["include_usage"])
	}
	if want := refMaxTokens(obj); r.MaxTokens != want {
		t.Fatalf("%q: MaxTokens %d, encoding/json reads %d", body, r.MaxTokens, want)
	}
	if r.Size != len(body) {
		t.Fatalf("%q: Size %d", body, r.Size)
	}
	checkRewrite(t, body, &r, Rewrite{Model: "up\"stream<&>", IncludeUsage: true})
	checkRewrite(t, body, &r, Rewrite{Model: r.Model})
}

// checkRefusal fails unless err is a refusal the reference agrees with.
func checkRefusal(t testing.TB, body []byte, obj map[string]json.RawMessage, refusals []string, err error) {
	t.Helper()
	var se *SyntaxError
	var e *Error
	switch {
	case errors.Is(err, ErrMissingModel):
		var model string
		if json.Unmarshal(obj["model"], &model) == nil && model != "" && !slicesContain(refusals, "model") {
			t.Fatalf("%q: ErrMissingModel, but encoding/json reads model %q", body, model)
		}
	case errors.As(err, &se):
		if se.Msg != "nesting too deep" || depth(body) <= maxDepth {
			t.Fatalf("rejected valid JSON %q: %v", body, err)
		}
	case errors.As(err, &e) && errors.Is(err, ErrMalformedRequest):
		if !slicesContain(refusals, e.Param) {
			t.Fatalf("%q: refused for %q (%v); the reference finds only %v", body, e.Param, err, refusals)
		}
	default:
		t.Fatalf("%q: unexpected error %v", body, err)
	}
}

// ambiguous lists the members a correct scan must refuse body for, found
// with encoding/json's own tokenizer: a member Relay reads that appears
// twice or under a case-folded name (encoding/json matches struct fields
// with bytes.EqualFold), a flag that is not a boolean, a model string that
// is not valid UTF-8. may adds "model" when the decoded model holds
// U+FFFD, which may come from a lone surrogate escape.
func ambiguous(body []byte, obj map[string]json.RawMessage) (must, may []string) {
	var out []string
	out = appendAmbiguous(out, "", body, []string{"model", "stream", "stream_options", "max_tokens", "max_completion_tokens", "max_output_tokens"})
	if opts := obj["stream_options"]; len(opts) > 0 && opts[0] == '{' {
		out = appendAmbiguous(out, "stream_options.", opts, []string{"include_usage"})
		var m map[string]json.RawMessage
		_ = json.Unmarshal(opts, &m)
		if v, ok := m["include_usage"]; ok && !isFlag(v) {
			out = append(out, "stream_options.include_usage")
		}
	}
	if v, ok := obj["stream"]; ok && !isFlag(v) {
		out = append(out, "stream")
	}
	if v := obj["model"]; len(v) > 0 && v[0] == '"' {
		var m string
		_ = json.Unmarshal(v, &m)
		if !utf8.Valid(v) {
			out = append(out, "model")
		} else if strings.ContainsRune(m, utf8.RuneError) {
			return out, append(out[:len(out):len(out)], "model")
		}
	}
	return out, out
}

func appendAmbiguous(out []string, prefix string, object []byte, names []string) []string {
	dec := json.NewDecoder(bytes.NewReader(object))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return out
	}
	count := map[string]int{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		key := tok.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return out
		}
		for _, name := range names {
			if key == name {
				count[name]++
			} else if strings.EqualFold(key, name) {
				count[name] += 2
			}
		}
	}
	for _, name := range names {
		if count[name] > 1 {
			out = append(out, prefix+name)
		}
	}
	return out
}

func isFlag(v json.RawMessage) bool {
	s := string(v)
	return s == "true" || s == "false" || s == "null"
}

// refMaxTokens is Request.MaxTokens as encoding/json reads the numbers: an
// integer into an int64, anything else into a float64, rounded up.
func refMaxTokens(obj map[string]json.RawMessage) int64 {
	var best int64
	for _, name := range []string{"max_tokens", "max_completion_tokens", "max_output_tokens"} {
		v := obj[name]
		if len(v) == 0 || v[0] < '0' || v[0] > '9' {
			continue
		}
		n := int64(MaxTokenLimit)
		if !bytes.ContainsAny(v, ".eE") {
			var i int64
			if json.Unmarshal(v, &i) == nil {
				n = min(i, MaxTokenLimit)
			}
		} else {
			var f float64
			if json.Unmarshal(v, &f) == nil && f < MaxTokenLimit {
				n = int64(math.Ceil(f))
			}
		}
		best = max(best, n)
	}
	return best
}

// checkRewrite checks that the rewritten body decodes as the original
// with only the rewritten members changed, and scans to the new values.
func checkRewrite(t testing.TB, body []byte, r *Request, rw Rewrite) {
	t.Helper()
	out := body
	if r.NeedsRewrite(rw) {
		out = AppendRewritten(nil, body, r, rw)
	}
	if !json.Valid(out) {
		t.Fatalf("rewrite of %q is not JSON: %q", body, out)
	}
	before, after := decodeObject(t, body), decodeObject(t, out)
	before["model"] = rw.Model
	if rw.IncludeUsage {
		opts, ok := before["stream_options"].(map[string]any)
		if !ok {
			opts = map[string]any{}
		}
		opts["include_usage"] = true
		before["stream_options"] = opts
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("rewrite %+v of %q = %q", rw, body, out)
	}
	r2, err := ScanRequest(out)
	if err != nil {
		t.Fatalf("rewrite %+v of %q = %q, which the scan refuses: %v", rw, body, out, err)
	}
	if r2.Model != rw.Model || r2.Stream != r.Stream || r2.MaxTokens != r.MaxTokens || r2.IncludeUsage != (r.IncludeUsage || rw.IncludeUsage) {
		t.Fatalf("rewrite %+v of %q = %q, which scans to %+v", rw, body, out, r2)
	}
}

// decodeObject decodes a valid JSON object with numbers kept as written.
func decodeObject(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return m
}

// depth is the deepest nesting of arrays and objects in a JSON text.
func depth(b []byte) int {
	d, deepest, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			d++
			deepest = max(deepest, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return deepest
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestScanDifferential_Random runs the differential check over bodies
// generated from a fixed seed: member names spelled with escapes, case
// folds and invalid bytes, duplicates at each depth the scan reads, values
// of every kind, and a share of byte-level damage.
func TestScanDifferential_Random(t *testing.T) {
	t.Parallel()
	n := 20000
	if testing.Short() {
		n = 2000
	}
	g := bodyGen{rand.New(rand.NewPCG(11, 1))}
	for range n {
		checkScanDifferential(t, g.body())
	}
}

// bodyGen makes request bodies for the differential check.
type bodyGen struct{ r *rand.Rand }

func (g bodyGen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

func (g bodyGen) body() []byte {
	var b []byte
	b = append(b, g.ws()...)
	b = append(b, '{')
	var keys []string
	for i, n := 0, g.r.IntN(7); i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		var name string
		if len(keys) > 0 && g.r.IntN(4) == 0 {
			name = keys[g.r.IntN(len(keys))] // a duplicate, maybe spelled otherwise
		} else {
			name = g.pick("model", "model", "model", "stream", "stream_options", "max_tokens", "max_completion_tokens", "max_output_tokens", "messages", "input", "metadata", "temperature", "modelx", "mode")
		}
		keys = append(keys, name)
		b = append(b, g.ws()...)
		b = g.key(b, name)
		b = append(b, g.ws()...)
		b = append(b, ':')
		b = append(b, g.ws()...)
		b = g.value(b, name, 0)
		b = append(b, g.ws()...)
	}
	b = append(b, '}')
	b = append(b, g.ws()...)
	switch g.r.IntN(12) {
	case 0: // damage a byte
		if len(b) > 0 {
			b[g.r.IntN(len(b))] = byte(g.r.IntN(256))
		}
	case 1: // cut short
		b = b[:g.r.IntN(len(b)+1)]
	case 2: // insert a byte
		i := g.r.IntN(len(b) + 1)
		b = append(b[:i], append([]byte{g.pick("\\", "\"", "{", "}", ",", ":", "\xff", "\xc5", " ")[0]}, b[i:]...)...)
	}
	return b
}

func (g bodyGen) ws() string {
	if g.r.IntN(5) > 0 {
		return ""
	}
	return g.pick(" ", "\n", "\t ", "\r\n")
}

// key appends name as a JSON string, spelled one of many ways a decoder
// may read as name (or almost as name).
func (g bodyGen) key(b []byte, name string) []byte {
	b = append(b, '"')
	mode := g.r.IntN(8)
	for i := 0; i < len(name); i++ {
		c := name[i]
		if mode < 4 || g.r.IntN(3) > 0 {
			b = append(b, c)
			continue
		}
		switch mode {
		case 4: // an escape, in either hex case
			b = append(b, `\u00`...)
			hex := "0123456789abcdef"
			if g.r.IntN(2) == 0 {
				hex = "0123456789ABCDEF"
			}
			b = append(b, hex[c>>4], hex[c&0xf])
		case 5: // another case
			if c >= 'a' && c <= 'z' {
				c -= 'a' - 'A'
			}
			b = append(b, c)
		case 6: // a rune that folds to the letter, raw or escaped
			switch c {
			case 's':
				b = append(b, g.pick("ſ", `\u017f`, `\u017F`)...)
			case 'k':
				b = append(b, g.pick("K", `\u212a`)...)
			case 'i':
				b = append(b, g.pick("ı", `\u0131`, "İ")...)
			default:
				b = append(b, c)
			}
		default: // something that breaks the name
			b = append(b, g.pick("\xff", `\ud800`, `\udc00\ud800`, `\ud83d\ude00`, `\/`, `\u0000`, "\u00e9", `\"`, `\\`)...)
		}
	}
	return append(b, '"')
}

func (g bodyGen) value(b []byte, name string, depth int) []byte {
	switch name {
	case "model":
		return append(b, g.pick(`"granted"`, `"granted"`, `"gr\u0061nted"`, `"other"`, `"a\ud83d\ude00"`, `"a\ud800"`, `"\udc00"`, "\"gr\xffanted\"", `""`, `"\u0000"`, `"a\"b\\c\/d\n"`, `null`, `42`, `{"model":"x"}`, `["granted"]`, "\"\u00e9t\u00e9\"")...)
	case "stream":
		return append(b, g.pick("true", "false", "null", `"true"`, "1", "0", "[]", "{}", "true", "false")...)
	case "stream_options":
		switch g.r.IntN(6) {
		case 0:
			return append(b, g.pick("null", `"x"`, "[]", "true")...)
		case 1:
			return append(b, "{}"...)
		}
		b = append(b, '{')
		for i, n := 0, 1+g.r.IntN(3); i < n; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			inner := g.pick("include_usage", "include_usage", "include_usage", "x", "stream")
			b = g.key(b, inner)
			b = append(b, ':')
			b = append(b, g.ws()...)
			b = append(b, g.pick("true", "false", "null", `"true"`, "1", `{"include_usage":true}`)...)
		}
		return append(b, '}')
	case "max_tokens", "max_completion_tokens", "max_output_tokens":
		return append(b, g.pick("0", "1", "256", "-5", "1.5", "1e5", "2E+3", "12e-1", "0.0001", "99999999999999999999", "4611686018427387905", "1e400", `"100"`, "null", "[1]")...)
	}
	if depth > 2 || g.r.IntN(3) == 0 {
		return append(b, g.pick(`"hi"`, "1", "-0.5e-3", "true", "null", `"\u00e9\ud83d\ude00\n"`, "[]", "{}")...)
	}
	if g.r.IntN(40) == 0 { // nesting near the scan's limit
		d := maxDepth - 3 + g.r.IntN(6)
		return append(append(b, strings.Repeat("[", d)...), strings.Repeat("]", d)...)
	}
	if g.r.IntN(2) == 0 {
		b = append(b, '[')
		for i, n := 0, g.r.IntN(3); i < n; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			b = g.value(b, "", depth+1)
		}
		return append(b, ']')
	}
	b = append(b, '{')
	for i, n := 0, g.r.IntN(3); i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		inner := g.pick("model", "stream", "role", "content", "role")
		b = g.key(b, inner)
		b = append(b, ':')
		b = g.value(b, inner, depth+1)
	}
	return append(b, '}')
}
