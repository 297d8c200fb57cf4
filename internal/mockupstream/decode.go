package mockupstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
)

// decodeBody unmarshals a request body and turns a failure into the
// provider's parse or type error.
func decodeBody(body []byte, v any, prov provider) *apiError {
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "body"
		}
		switch prov {
		case provAnthropic:
			return &apiError{kind: errInvalid, msg: field + ": Input should be a valid " + jsonKind(te.Type)}
		case provGemini:
			return &apiError{kind: errInvalid, msg: "Invalid JSON payload received. Invalid value at '" + field + "' (" + te.Value + ")"}
		}
		return &apiError{
			kind:  errInvalid,
			msg:   "Invalid type for '" + field + "': expected " + jsonKind(te.Type) + ", but got " + te.Value + " instead.",
			param: field,
			code:  "invalid_type",
		}
	}
	switch prov {
	case provAnthropic:
		return &apiError{kind: errInvalid, msg: "There was an issue with the JSON body of your request: it could not be parsed."}
	case provGemini:
		return &apiError{kind: errInvalid, msg: "Invalid JSON payload received. Unexpected token."}
	}
	return &apiError{kind: errInvalid, msg: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)"}
}

// jsonKind names a Go type the way a JSON API would.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "value"
}

// typeMismatch reports a value of the wrong JSON type from an Unmarshaler;
// encoding/json fills in the field path.
func typeMismatch(data []byte, want reflect.Type) error {
	return &json.UnmarshalTypeError{Value: jsonValueKind(data), Type: want}
}

func jsonValueKind(data []byte) string {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return "nothing"
	}
	switch data[0] {
	case '"':
		return "a string"
	case '[':
		return "an array"
	case '{':
		return "an object"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// openAIContent is an OpenAI content field (Chat message content, Responses
// message content or function_call_output output): a string, null, or an
// array of parts of which the text parts are kept.
type openAIContent struct {
	text  string
	media int  // non-text parts
	set   bool // present and not null
}

type openAIPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *openAIContent) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil
	}
	switch data[0] {
	case 'n':
		return nil
	case '"':
		c.set = true
		return json.Unmarshal(data, &c.text)
	case '[':
		var parts []openAIPart
		if err := json.Unmarshal(data, &parts); err != nil {
			return err
		}
		c.set = true
		var b strings.Builder
		for _, p := range parts {
			switch p.Type {
			case "text", "input_text", "output_text":
				if b.Len() > 0 {
					b.WriteByte('\n')
				}
				b.WriteString(p.Text)
			case "refusal":
			default:
				c.media++
			}
		}
		c.text = b.String()
		return nil
	}
	return typeMismatch(data, reflect.TypeFor[string]())
}

// stopList reads a stop field: a string or an array of strings.
func stopList(raw json.RawMessage) []string {
	if isNull(raw) {
		return nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(raw, &many)
	return many
}
