package mockupstream

import (
	"bytes"
	"encoding/json"
	"strings"
)

// schemaNode is the part of a JSON Schema (or Gemini's OpenAPI-subset Schema)
// that example arguments are generated from.
type schemaNode struct {
	Type       json.RawMessage            `json:"type"`
	Properties map[string]json.RawMessage `json:"properties"`
	Required   []string                   `json:"required"`
	Enum       []json.RawMessage          `json:"enum"`
	Const      json.RawMessage            `json:"const"`
	AnyOf      []json.RawMessage          `json:"anyOf"`
	OneOf      []json.RawMessage          `json:"oneOf"`
}

// maxSchemaDepth bounds the recursion into nested object schemas.
const maxSchemaDepth = 8

// exampleArgs returns a JSON object holding an example value for each
// required property of the schema: string "example", number or integer 1,
// boolean true, array [], object {} filled the same way, an enum's first value.
func exampleArgs(schema json.RawMessage) string {
	var n schemaNode
	if len(schema) == 0 || json.Unmarshal(schema, &n) != nil {
		return "{}"
	}
	return string(appendObject(make([]byte, 0, 64), &n, 0))
}

func appendObject(dst []byte, n *schemaNode, depth int) []byte {
	dst = append(dst, '{')
	for i, name := range n.Required {
		if contains(n.Required[:i], name) {
			continue
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		key, _ := json.Marshal(name)
		dst = append(dst, key...)
		dst = append(dst, ':')
		dst = appendExample(dst, n.Properties[name], depth+1)
	}
	return append(dst, '}')
}

func appendExample(dst []byte, raw json.RawMessage, depth int) []byte {
	var n schemaNode
	if len(raw) == 0 || depth > maxSchemaDepth || json.Unmarshal(raw, &n) != nil {
		return append(dst, `"example"`...)
	}
	if len(n.Const) > 0 {
		return appendCompact(dst, n.Const)
	}
	if len(n.Enum) > 0 {
		return appendCompact(dst, n.Enum[0])
	}
	typ := schemaType(n.Type)
	if typ == "" {
		switch {
		case n.Properties != nil || n.Required != nil:
			typ = "object"
		case len(n.AnyOf) > 0:
			return appendExample(dst, n.AnyOf[0], depth+1)
		case len(n.OneOf) > 0:
			return appendExample(dst, n.OneOf[0], depth+1)
		}
	}
	switch typ {
	case "number", "integer":
		return append(dst, '1')
	case "boolean":
		return append(dst, "true"...)
	case "array":
		return append(dst, "[]"...)
	case "null":
		return append(dst, "null"...)
	case "object":
		return appendObject(dst, &n, depth)
	default:
		return append(dst, `"example"`...)
	}
}

// schemaType reads "type": a name, or a list whose first non-null name wins.
// Gemini's upper-case names are folded.
func schemaType(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return strings.ToLower(one)
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		for _, t := range many {
			if t = strings.ToLower(t); t != "null" {
				return t
			}
		}
		if len(many) > 0 {
			return "null"
		}
	}
	return ""
}

func appendCompact(dst []byte, raw json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return append(dst, "null"...)
	}
	return append(dst, b.Bytes()...)
}
