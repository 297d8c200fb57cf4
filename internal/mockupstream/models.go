package mockupstream

import "time"

// The model listings are built per call: the package holds no mutable state.

type openAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

type openAIModelList struct {
	Object string        `json:"object"`
	Data   []openAIModel `json:"data"`
}

// The listings hold a few well-known models; retrieving one by id succeeds for
// any id, since the mock serves every model name.

func (c *call) serveOpenAIModels() {
	m := func(id string, created int64, owner string) openAIModel {
		return openAIModel{ID: id, Object: "model", Created: created, OwnedBy: owner}
	}
	if c.model != "" {
		c.writeJSON(&openAIModel{ID: c.model, Object: "model", Created: 1715367049, OwnedBy: "system"})
		return
	}
	c.writeJSON(&openAIModelList{Object: "list", Data: []openAIModel{
		m("gpt-4o", 1715367049, "system"),
		m("gpt-4o-mini", 1721172741, "system"),
		m("gpt-4.1", 1744316542, "system"),
		m("gpt-4.1-mini", 1744318173, "system"),
		m("o4-mini", 1744225351, "system"),
		m("gpt-5", 1754425777, "system"),
		m("gpt-5-mini", 1754425928, "system"),
		m("text-embedding-3-small", 1705948997, "system"),
		m("text-embedding-3-large", 1705953180, "system"),
		m("text-embedding-ada-002", 1671217299, "openai-internal"),
	}})
}

type anthropicModel struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

type anthropicModelList struct {
	Data    []anthropicModel `json:"data"`
	HasMore bool             `json:"has_more"`
	FirstID string           `json:"first_id"`
	LastID  string           `json:"last_id"`
}

func (c *call) serveAnthropicModels() {
	m := func(id, name string, y int, mo time.Month, d int) anthropicModel {
		return anthropicModel{Type: "model", ID: id, DisplayName: name, CreatedAt: time.Date(y, mo, d, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)}
	}
	if c.model != "" {
		c.writeJSON(&anthropicModel{Type: "model", ID: c.model, DisplayName: c.model, CreatedAt: "2025-01-01T00:00:00Z"})
		return
	}
	data := []anthropicModel{
		m("claude-opus-4-1-20250805", "Claude Opus 4.1", 2025, time.August, 5),
		m("claude-sonnet-4-5-20250929", "Claude Sonnet 4.5", 2025, time.September, 29),
		m("claude-haiku-4-5-20251001", "Claude Haiku 4.5", 2025, time.October, 1),
		m("claude-3-7-sonnet-20250219", "Claude Sonnet 3.7", 2025, time.February, 19),
	}
	c.writeJSON(&anthropicModelList{Data: data, FirstID: data[0].ID, LastID: data[len(data)-1].ID})
}

type geminiModel struct {
	Name                       string   `json:"name"`
	Version                    string   `json:"version"`
	DisplayName                string   `json:"displayName"`
	InputTokenLimit            int      `json:"inputTokenLimit"`
	OutputTokenLimit           int      `json:"outputTokenLimit"`
	SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
}

type geminiModelList struct {
	Models []geminiModel `json:"models"`
}

func (c *call) serveGeminiModels() {
	gen := []string{"generateContent", "countTokens"}
	if c.model != "" {
		c.writeJSON(&geminiModel{Name: "models/" + c.model, Version: "001", DisplayName: c.model, InputTokenLimit: 1048576, OutputTokenLimit: 65536, SupportedGenerationMethods: gen})
		return
	}
	c.writeJSON(&geminiModelList{Models: []geminiModel{
		{Name: "models/gemini-2.5-pro", Version: "2.5", DisplayName: "Gemini 2.5 Pro", InputTokenLimit: 1048576, OutputTokenLimit: 65536, SupportedGenerationMethods: gen},
		{Name: "models/gemini-2.5-flash", Version: "001", DisplayName: "Gemini 2.5 Flash", InputTokenLimit: 1048576, OutputTokenLimit: 65536, SupportedGenerationMethods: gen},
		{Name: "models/gemini-2.0-flash", Version: "2.0", DisplayName: "Gemini 2.0 Flash", InputTokenLimit: 1048576, OutputTokenLimit: 8192, SupportedGenerationMethods: gen},
		{Name: "models/gemini-embedding-001", Version: "001", DisplayName: "Gemini Embedding 001", InputTokenLimit: 2048, OutputTokenLimit: 1, SupportedGenerationMethods: []string{"embedContent", "countTextTokens", "countTokens"}},
	}})
}
