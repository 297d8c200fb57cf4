package wire

import (
	"strconv"
	"time"
)

// Model is what a model list says of one catalog model.
type Model struct {
	Name     string
	Provider string
	// Embedding: an embedding model (Gemini lists its methods).
	Embedding       bool
	ContextWindow   int64 // 0: unknown, not listed
	MaxOutputTokens int64 // 0: unknown, not listed
	CreatedAt       time.Time
}

// created is when the model was added, the epoch when unknown.
func (m *Model) created() time.Time {
	if m.CreatedAt.IsZero() {
		return time.Unix(0, 0)
	}
	return m.CreatedAt
}

// AppendModel appends m as the dialect's model object: OpenAI's
// {"id","object":"model",…}, Anthropic's {"type":"model",…} or Gemini's
// {"name":"models/…",…}.
func (d Dialect) AppendModel(b []byte, m *Model) []byte {
	switch d {
	case DialectAnthropic:
		b = append(b, `{"type":"model","id":`...)
		b = AppendString(b, m.Name)
		b = append(b, `,"display_name":`...)
		b = AppendString(b, m.Name)
		b = append(b, `,"created_at":"`...)
		b = m.created().UTC().AppendFormat(b, time.RFC3339)
		return append(b, `"}`...)
	case DialectGemini:
		return appendGeminiModel(b, m)
	}
	b = append(b, `{"id":`...)
	b = AppendString(b, m.Name)
	b = append(b, `,"object":"model","created":`...)
	b = strconv.AppendInt(b, m.created().Unix(), 10)
	b = append(b, `,"owned_by":`...)
	b = AppendString(b, m.Provider)
	return append(b, '}')
}

// appendGeminiModel appends m as a Gemini Model object.
func appendGeminiModel(b []byte, m *Model) []byte {
	b = append(b, `{"name":`...)
	b = AppendString(b, "models/"+m.Name)
	b = append(b, `,"baseModelId":`...)
	b = AppendString(b, m.Name)
	b = append(b, `,"version":"001","displayName":`...)
	b = AppendString(b, m.Name)
	if m.ContextWindow > 0 {
		b = append(b, `,"inputTokenLimit":`...)
		b = strconv.AppendInt(b, m.ContextWindow, 10)
	}
	if m.MaxOutputTokens > 0 {
		b = append(b, `,"outputTokenLimit":`...)
		b = strconv.AppendInt(b, m.MaxOutputTokens, 10)
	}
	b = append(b, `,"supportedGenerationMethods":`...)
	if m.Embedding {
		b = append(b, `["embedContent","batchEmbedContents"]`...)
	} else {
		b = append(b, `["generateContent","countTokens"]`...)
	}
	return append(b, '}')
}

// AppendModelList appends listed in the dialect's list envelope: OpenAI's
// {"object":"list","data":[…]}, Anthropic's one page
// {"data":[…],"has_more":false,"first_id","last_id"} or Gemini's
// {"models":[…]}.
func (d Dialect) AppendModelList(b []byte, listed []Model) []byte {
	switch d {
	case DialectGemini:
		b = append(b, `{"models":[`...)
	case DialectAnthropic:
		b = append(b, `{"data":[`...)
	default:
		b = append(b, `{"object":"list","data":[`...)
	}
	for i := range listed {
		if i > 0 {
			b = append(b, ',')
		}
		b = d.AppendModel(b, &listed[i])
	}
	if d != DialectAnthropic {
		return append(b, `]}`...)
	}
	b = append(b, `],"has_more":false,"first_id":`...)
	if len(listed) == 0 {
		return append(b, `null,"last_id":null}`...)
	}
	b = AppendString(b, listed[0].Name)
	b = append(b, `,"last_id":`...)
	b = AppendString(b, listed[len(listed)-1].Name)
	return append(b, '}')
}
