package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestScanGemini_ReadsGenerationConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		max        int64
		schema     bool
	}{
		{"camel", `{"contents":[],"generationConfig":{"maxOutputTokens":300}}`, 300, false},
		{"snake", `{"generation_config":{"max_output_tokens":7,"response_schema":{}}}`, 7, true},
		{"escaped", `{"generationConfig":{"max\u004futputTokens":100000}}`, 100000, false},
		{"mixed spellings of two members", `{"generation_config":{"maxOutputTokens":5,"response_json_schema":{"type":"object"}}}`, 5, true},
		{"null schema", `{"generationConfig":{"responseSchema":null}}`, 0, false},
		{"absent", `{"contents":[]}`, 0, false},
		{"not an object", `{"generationConfig":[1]}`, 0, false},
		{"rounded up", `{"generationConfig":{"maxOutputTokens":2.5}}`, 3, false},
	} {
		g, err := ScanGemini([]byte(tc.body))
		if err != nil || g.MaxTokens != tc.max || g.JSONSchema != tc.schema {
			t.Errorf("%s: %+v, %v; want max %d schema %v", tc.name, g, err, tc.max, tc.schema)
		}
	}
}

func TestScanGemini_RefusesDuplicates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, param string
	}{
		{"escaped maxOutputTokens", `{"generationConfig":{"maxOutputTokens":3,"max\u004futputTokens":100000}}`, "generationConfig.maxOutputTokens"},
		{"camel and snake", `{"generationConfig":{"maxOutputTokens":3,"max_output_tokens":100000}}`, "generationConfig.maxOutputTokens"},
		{"case variant", `{"generationConfig":{"maxoutputtokens":100000}}`, "generationConfig.maxOutputTokens"},
		{"generationConfig twice", `{"generationConfig":{"maxOutputTokens":3},"generation_config":{"maxOutputTokens":100000}}`, "generationConfig"},
		{"escaped generationConfig", `{"generationConfig":{},"gener\u0061tionConfig":{"maxOutputTokens":100000}}`, "generationConfig"},
		{"response schema", `{"generationConfig":{"responseSchema":null,"response_schema":{}}}`, "generationConfig.responseSchema"},
	} {
		_, err := ScanGemini([]byte(tc.body))
		var we *Error
		if !errors.As(err, &we) || !errors.Is(err, ErrMalformedRequest) || we.Param != tc.param {
			t.Errorf("%s: err %v, want a refusal of %s", tc.name, err, tc.param)
		}
	}
}

func TestScanGemini_DoesNotAllocate(t *testing.T) {
	body := []byte(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"temperature":0.5,"maxOutputTokens":300,"responseSchema":{"type":"OBJECT"}}}`)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := ScanGemini(body); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("ScanGemini allocates %v times", allocs)
	}
}

func TestScanRoute_RefusesEscapedAndAliasedDuplicates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, param string
	}{
		{"gemini schema aliases", `{"generationConfig":{"responseSchema":null,"response_schema":{}}}`, "generationConfig.responseSchema"},
		{"generationConfig aliases", `{"generationConfig":{},"generation_config":{"responseSchema":{}}}`, "generationConfig"},
		{"folded generationConfig", `{"generationconfig":{"responseSchema":{}}}`, "generationConfig"},
		{"systemInstruction aliases", `{"systemInstruction":{},"system_instruction":{}}`, "systemInstruction"},
		{"escaped messages", `{"messages":[],"m\u0065ssages":[{"content":[{"type":"image_url"}]}]}`, "messages"},
		{"contents twice", `{"contents":[],"contents":[]}`, "contents"},
		{"response_format type", `{"response_format":{"type":"text","typ\u0065":"json_schema"}}`, "response_format.type"},
		{"text format", `{"text":{"format":{},"form\u0061t":{"type":"json_schema"}}}`, "text.format"},
		{"metadata user_id", `{"metadata":{"user_id":"a","user_\u0069d":"b"}}`, "metadata.user_id"},
		{"conversation id", `{"conversation":{"id":"a","ID":"b"}}`, "conversation.id"},
	} {
		_, err := ScanRoute([]byte(tc.body))
		var we *Error
		if !errors.As(err, &we) || !errors.Is(err, ErrMalformedRequest) || we.Param != tc.param {
			t.Errorf("%s: err %v, want a refusal of %s", tc.name, err, tc.param)
		}
	}
}

func TestScanRoute_ReadsEscapedMembers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		images     int
		schema     bool
	}{
		{"escaped messages", `{"m\u0065ssages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 1, false},
		{"escaped part type", `{"messages":[{"content":[{"typ\u0065":"im\u0061ge_url","image_url":{"url":"x"}}]}]}`, 1, false},
		{"snake gemini", `{"contents":[{"parts":[{"inline_data":{"mime_type":"image/png","data":"AA"}}]}],"generation_config":{"response_schema":{}}}`, 1, true},
		{"escaped generationConfig", `{"gener\u0061tionConfig":{"response\u004ason\u0053chema":{}}}`, 0, true},
		{"escaped response_format", `{"response_form\u0061t":{"typ\u0065":"json_\u006fbject"}}`, 0, true},
	} {
		f, err := ScanRoute([]byte(tc.body))
		if err != nil || f.Images != tc.images || f.JSONSchema != tc.schema {
			t.Errorf("%s: %+v, %v; want %d images, schema %v", tc.name, f, err, tc.images, tc.schema)
		}
	}
}

// checkGeminiDifferential holds ScanGemini to a reference built on
// encoding/json's tokenizer with Gemini's field matching (a field under its
// camelCase or its proto name; case folded, as decoders written in Go do):
// a member read twice must be refused, else the values must agree.
func checkGeminiDifferential(t testing.TB, body []byte) {
	t.Helper()
	g, err := ScanGemini(body)
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil || obj == nil {
		if err == nil {
			t.Fatalf("accepted %q, which is not a JSON object", body)
		}
		return
	}
	var refusals []string
	gc, n := geminiRef(body, "generationConfig", "generation_config")
	if n > 1 {
		refusals = append(refusals, "generationConfig")
	}
	var maxTokens []byte
	schema := false
	if len(gc) > 0 && gc[0] == '{' {
		for _, m := range [][2]string{{"maxOutputTokens", "max_output_tokens"}, {"responseSchema", "response_schema"}, {"responseJsonSchema", "response_json_schema"}} {
			v, n := geminiRef(gc, m[0], m[1])
			if n > 1 {
				refusals = append(refusals, "generationConfig."+m[0])
			}
			if m[0] == "maxOutputTokens" {
				maxTokens = v
			} else if n > 0 && string(v) != "null" {
				schema = true
			}
		}
	}
	if err != nil {
		var se *SyntaxError
		var we *Error
		switch {
		case errors.As(err, &se) && se.Msg == "nesting too deep" && depth(body) > maxDepth:
		case errors.As(err, &we) && slicesContain(refusals, we.Param):
		default:
			t.Fatalf("%q: %v; the reference refuses only %v", body, err, refusals)
		}
		return
	}
	if len(refusals) > 0 {
		t.Fatalf("accepted %q, which is ambiguous in %v", body, refusals)
	}
	if want := refMaxTokens(map[string]json.RawMessage{"max_tokens": maxTokens}); g.MaxTokens != want || g.JSONSchema != schema {
		t.Fatalf("%q: %+v; the reference reads max %d, schema %v", body, g, want, schema)
	}
	if f, err := ScanRoute(body); err == nil && f.JSONSchema != schema {
		t.Fatalf("%q: ScanRoute reads schema %v, ScanGemini %v", body, f.JSONSchema, schema)
	}
}

// geminiRef returns the last value of the object's member spelled camel or
// snake (compared after unescaping, case folded) and how many there are.
func geminiRef(object []byte, camel, snake string) (json.RawMessage, int) {
	dec := json.NewDecoder(bytes.NewReader(object))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, 0
	}
	var last json.RawMessage
	n := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, 0
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil, 0
		}
		if key := tok.(string); key == camel || key == snake {
			last, n = v, n+1
		} else if strings.EqualFold(key, camel) || strings.EqualFold(key, snake) {
			last, n = v, n+2
		}
	}
	return last, n
}

// TestScanGeminiDifferential_Random runs the Gemini differential over
// bodies from a fixed seed: generationConfig and its members under both
// spellings, escaped, case-folded, duplicated, with values of every kind.
func TestScanGeminiDifferential_Random(t *testing.T) {
	t.Parallel()
	n := 20000
	if testing.Short() {
		n = 2000
	}
	g := geminiGen{bodyGen{rand.New(rand.NewPCG(21, 3))}}
	for range n {
		checkGeminiDifferential(t, g.body())
	}
}

// geminiGen makes Gemini bodies for the differential check.
type geminiGen struct{ bodyGen }

func (g geminiGen) body() []byte {
	b := []byte{'{'}
	for i, n := 0, g.r.IntN(4); i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		name := g.pick("generationConfig", "generationConfig", "generation_config", "contents", "systemInstruction", "tools")
		b = g.key(b, name)
		b = append(b, ':')
		b = append(b, g.ws()...)
		if name == "generationConfig" || name == "generation_config" {
			b = g.config(b)
		} else {
			b = g.value(b, "", 1)
		}
	}
	b = append(b, '}')
	switch g.r.IntN(12) {
	case 0:
		if len(b) > 0 {
			b[g.r.IntN(len(b))] = byte(g.r.IntN(256))
		}
	case 1:
		b = b[:g.r.IntN(len(b)+1)]
	}
	return b
}

func (g geminiGen) config(b []byte) []byte {
	if g.r.IntN(8) == 0 {
		return append(b, g.pick("null", "[]", `"x"`, "1")...)
	}
	b = append(b, '{')
	for i, n := 0, g.r.IntN(4); i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		name := g.pick("maxOutputTokens", "max_output_tokens", "maxOutputTokens", "responseSchema", "response_schema", "responseJsonSchema", "response_json_schema", "temperature")
		b = g.key(b, name)
		b = append(b, ':')
		if strings.HasPrefix(name, "max") {
			b = g.value(b, "max_tokens", 2)
		} else {
			b = append(b, g.pick("null", "{}", `{"type":"OBJECT"}`, "1")...)
		}
	}
	return append(b, '}')
}

// FuzzScanGemini holds ScanGemini to the reference (see
// checkGeminiDifferential).
func FuzzScanGemini(f *testing.F) {
	for _, s := range []string{
		`{"generationConfig":{"maxOutputTokens":3,"max\u004futputTokens":100000}}`,
		`{"generation_config":{"max_output_tokens":7,"responseSchema":{}}}`,
		`{"contents":[{"parts":[{"text":"hi"}]}]}`, `[]`, `null`, `{"generationConfig":`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkGeminiDifferential(t, body)
	})
}

// routeGroups are the top-level members ScanRoute reads, each with the
// spellings one decoder or another takes for it.
var routeGroups = [][]string{
	{"tools"}, {"functions"}, {"response_format"}, {"text"}, {"output_format"}, {"metadata"},
	{"prompt_cache_key"}, {"conversation"}, {"previous_response_id"},
	{"generationConfig", "generation_config"}, {"system"}, {"instructions"},
	{"systemInstruction", "system_instruction"}, {"messages"}, {"input"}, {"contents"},
}

// checkRouteDifferential holds ScanRoute's top-level refusals to the
// reference: a member it reads found twice (exactly, under another
// spelling, or case-folded) must be refused, and nothing else at the top
// level may be; tools must read as encoding/json reads them.
func checkRouteDifferential(t testing.TB, body []byte) {
	t.Helper()
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil || obj == nil {
		return
	}
	f, err := ScanRoute(body)
	var refusals []string
	var tools json.RawMessage
	for _, g := range routeGroups {
		v, n := geminiRef(body, g[0], g[len(g)-1])
		if n > 1 {
			refusals = append(refusals, g[0])
		}
		if g[0] == "tools" {
			tools = v
		}
	}
	var we *Error
	var se *SyntaxError
	switch {
	case errors.As(err, &se) && se.Msg == "nesting too deep" && depth(body) > maxDepth:
	case err == nil && len(refusals) > 0:
		t.Fatalf("accepted %q, which is ambiguous in %v", body, refusals)
	case err == nil:
		var arr []json.RawMessage
		if f.Tools != (json.Unmarshal(tools, &arr) == nil && len(arr) > 0) && !(len(obj["functions"]) > 2 && obj["functions"][0] == '[') {
			t.Fatalf("%q: Tools %v, encoding/json reads %s", body, f.Tools, tools)
		}
	case errors.As(err, &we) && strings.Contains(we.Param, "."):
		// a nested member: checked by the table tests
	case errors.As(err, &we) && slicesContain(refusals, we.Param):
	default:
		t.Fatalf("%q: %v; the reference refuses only %v", body, err, refusals)
	}
}

// TestScanRouteDifferential_Random runs checkRouteDifferential over bodies
// from a fixed seed, route members spelled every way bodyGen.key knows.
func TestScanRouteDifferential_Random(t *testing.T) {
	t.Parallel()
	n := 5000
	if testing.Short() {
		n = 1000
	}
	g := bodyGen{rand.New(rand.NewPCG(31, 5))}
	var names []string
	for _, grp := range routeGroups {
		names = append(names, grp...)
	}
	names = append(names, "model", "temperature")
	for range n {
		b := []byte{'{'}
		for i, k := 0, g.r.IntN(6); i < k; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			name := g.pick(names...)
			b = g.key(b, name)
			b = append(b, ':')
			if name == "tools" || name == "functions" {
				b = append(b, g.pick("[]", `[{"type":"function"}]`, "null", `{}`)...)
			} else {
				b = g.value(b, "", 1)
			}
		}
		checkRouteDifferential(t, append(b, '}'))
	}
}
