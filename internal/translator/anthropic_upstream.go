package translator

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// Anthropic Messages, upstream side: encode a request for the anthropic
// shape.

var anthropicSupport = supportTable{
	FeatSystemMid:       {Emulated, `hoisted into system in order (Anthropic has no system turns); the position is lost`},
	FeatSameRoleTurns:   {Emulated, "merged into one turn, as Anthropic itself would; tool results regrouped right after their calls"},
	FeatMessageName:     {Rejected, "Anthropic messages have no participant name"},
	FeatImageBase64:     {Yes, "jpeg, png, gif and webp; other media types are rejected"},
	FeatImageDetail:     {Rejected, "Anthropic has no image detail level (auto is accepted)"},
	FeatAudioInput:      {Rejected, "Anthropic takes no audio"},
	FeatFileInput:       {Yes, "PDF and plain-text data become document blocks; file ids are rejected"},
	FeatParallelOff:     {Yes, "tool_choice.disable_parallel_tool_use"},
	FeatThinkingHistory: {Yes, "Anthropic-signed blocks are replayed; unsigned or foreign reasoning is dropped"},
	FeatReasoning:       {Emulated, "reasoning_effort low, medium, high, xhigh → thinking enabled with budget_tokens 1024, 4096, 16384, 32768 (kept below max_tokens); none and minimal → thinking off"},
	FeatMaxTokens:       {Yes, "max_tokens defaults to the model's catalog max output, else 4096"},
	FeatTemperature:     {Yes, "0–1; values above 1 are rejected"},
	FeatN:               {Rejected, "Anthropic returns one answer per request"},
	FeatLogprobs:        {Rejected, "Anthropic returns no log probabilities"},
	FeatLogitBias:       {Rejected, "Anthropic has no logit bias"},
	FeatSeed:            {Rejected, "Anthropic has no seed"},
	FeatPenalties:       {Rejected, "Anthropic has no presence or frequency penalty"},
	FeatJSONObject:      {Rejected, "Anthropic structured output needs a schema"},
	FeatJSONSchema:      {Yes, "output_config.format; the schema's name is not sent"},
	FeatVerbosity:       {Rejected, "Anthropic has no verbosity setting"},
	FeatMetadata:        {Dropped, "Anthropic metadata holds user_id only"},
	FeatUser:            {Yes, "metadata.user_id"},
	FeatServiceTier:     {Emulated, "auto → auto, default → standard_only; other tiers are dropped"},
	FeatStore:           {Rejected, "Anthropic does not store completions"},
	FeatPromptCacheKey:  {Dropped, "Anthropic caches by cache_control breakpoints, not keys"},
	FeatPrefill:         {Yes, "Anthropic continues the final assistant message"},
	FeatToolStrict:      {Yes, "tools[].strict"},
}

// anthropicUpstream speaks Messages to the binding.
type anthropicUpstream struct {
	now time.Time

	// Stream state.
	started   bool
	parts     map[int]int // block index → canonical part index; absent: ignored block
	next      int
	counts    anthCounts
	completed bool
}

func newAnthropicUpstream(now time.Time) upstream { return &anthropicUpstream{now: now} }

func (u *anthropicUpstream) path(*Target, bool) string {
	return wire.UpstreamPath(wire.InboundMessages, wire.ShapeAnthropic)
}

// anthropicMedia are the image types Anthropic accepts.
var anthropicMedia = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

func (u *anthropicUpstream) encode(dst []byte, x *encoder) ([]byte, error) {
	r := x.r
	q := anthRequestOut{Model: x.t.UpstreamModel, Stream: r.Stream, Temperature: r.Temperature, TopP: r.TopP, TopK: r.TopK, StopSequences: r.Stop}
	if err := commonChecks(x); err != nil {
		return dst, err
	}
	if r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 1) {
		return dst, x.reject(FeatTemperature, "Anthropic's temperature runs from 0 to 1")
	}
	system, msgs := r.HoistedSystem()
	if len(system) > 0 {
		q.System = anthSystemBlocks(system)
	}
	var err error
	if q.Messages, err = anthTurns(canonical.GroupToolResults(msgs), x); err != nil {
		return dst, err
	}
	if len(q.Messages) == 0 {
		return dst, badField("messages", "no message has content Anthropic can take")
	}
	q.Tools = anthToolsOf(r.Tools)
	q.ToolChoice = anthToolChoiceOf(r)
	maxTokens := anthMaxTokens(r, x.t)
	q.MaxTokens = &maxTokens
	if q.Thinking, err = anthThinkingOf(r.Reasoning, maxTokens, x); err != nil {
		return dst, err
	}
	if q.OutputConfig, err = anthOutputConfigOf(r.ResponseFormat, x); err != nil {
		return dst, err
	}
	if r.User != "" {
		q.Metadata = &anthMetadata{UserID: r.User}
	}
	q.ServiceTier = anthServiceTier(r.ServiceTier, x)
	b, err := json.Marshal(&q)
	if err != nil {
		return dst, fmt.Errorf("encode messages request: %w", err)
	}
	return append(dst, b...), nil
}

// anthSystemBlocks is the system prompt as text blocks, empty parts left
// out.
func anthSystemBlocks(system []canonical.Part) []anthBlock {
	blocks := make([]anthBlock, 0, len(system))
	for _, p := range system {
		if p.Text == "" {
			continue
		}
		t := p.Text
		blocks = append(blocks, anthBlock{Type: "text", Text: &t, CacheControl: p.CacheHint})
	}
	return blocks
}

// anthTurns are the Messages turns for msgs: user and tool messages make
// user turns, assistant messages assistant turns, and neighbours of one
// role merge into one turn, as Anthropic itself would.
func anthTurns(msgs []canonical.Message, x *encoder) ([]anthTurn, error) {
	var turns []anthTurn
	for i := range msgs {
		m := &msgs[i]
		if m.Name != "" {
			if err := x.check(FeatMessageName); err != nil {
				return nil, err
			}
		}
		var (
			role string
			bs   []anthBlock
			err  error
		)
		switch m.Role {
		case canonical.RoleUser, canonical.RoleTool:
			role = "user"
			bs, err = anthUserBlocks(m.Parts, x)
		case canonical.RoleAssistant:
			role = "assistant"
			bs, err = anthAssistantBlocks(m.Parts)
		default:
			continue
		}
		if err != nil {
			return nil, err
		}
		turns = addAnthTurn(turns, role, bs)
	}
	return turns, nil
}

// addAnthTurn appends bs as a turn of role, or to the last turn when that
// has the same role.
func addAnthTurn(turns []anthTurn, role string, bs []anthBlock) []anthTurn {
	if len(bs) == 0 {
		return turns
	}
	if n := len(turns); n > 0 && turns[n-1].Role == role {
		turns[n-1].Content = append(turns[n-1].Content, bs...)
		return turns
	}
	return append(turns, anthTurn{Role: role, Content: bs})
}

// anthUserBlocks are a user or tool message's blocks.
func anthUserBlocks(parts []canonical.Part, x *encoder) ([]anthBlock, error) {
	var bs []anthBlock
	for i := range parts {
		b, ok, err := anthBlockOf(&parts[i], x)
		if err != nil {
			return nil, err
		}
		if ok {
			bs = append(bs, b)
		}
	}
	return bs, nil
}

// anthAssistantBlocks are an assistant message's blocks.
func anthAssistantBlocks(parts []canonical.Part) ([]anthBlock, error) {
	var bs []anthBlock
	for i := range parts {
		b, ok, err := anthAssistantBlock(&parts[i])
		if err != nil {
			return nil, err
		}
		if ok {
			bs = append(bs, b)
		}
	}
	return bs, nil
}

// anthAssistantBlock is the assistant-turn block for a part; ok is false
// for parts that send nothing (empty text, thinking Anthropic did not
// sign).
func anthAssistantBlock(p *canonical.Part) (anthBlock, bool, error) {
	switch p.Type {
	case canonical.PartThinking:
		// Only Anthropic's own signed thinking goes back.
		if p.Origin == canonical.OriginAnthropic && p.Signature != "" {
			t, s := p.Text, p.Signature
			return anthBlock{Type: "thinking", Thinking: &t, Signature: &s}, true, nil
		}
	case canonical.PartRedactedThinking:
		if p.Origin == canonical.OriginAnthropic {
			return anthBlock{Type: "redacted_thinking", Data: p.Signature}, true, nil
		}
	case canonical.PartText, canonical.PartRefusal:
		if p.Text != "" {
			t := p.Text
			return anthBlock{Type: "text", Text: &t, CacheControl: p.CacheHint}, true, nil
		}
	case canonical.PartToolCall:
		return anthToolUse(p)
	}
	return anthBlock{}, false, nil
}

// anthToolUse is the tool_use block for a tool call, whose arguments must
// be one JSON object.
func anthToolUse(p *canonical.Part) (anthBlock, bool, error) {
	input, ok := argsObject(p.ToolCall.Arguments)
	if !ok {
		return anthBlock{}, false, badField("messages[].tool_calls[].function.arguments", "the arguments of tool call %q are not a JSON object", p.ToolCall.ID)
	}
	return anthBlock{Type: "tool_use", ID: anthropicID(p.ToolCall.ID), Name: p.ToolCall.Name, Input: input, CacheControl: p.CacheHint}, true, nil
}

// anthToolsOf is the tool list; a tool without parameters takes an empty
// object, which Anthropic requires.
func anthToolsOf(tools []canonical.Tool) []anthTool {
	var out []anthTool
	for _, t := range tools {
		schema := t.Parameters
		if isNull(schema) {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out = append(out, anthTool{Name: t.Name, Description: t.Description, InputSchema: schema, Strict: t.Strict, CacheControl: t.CacheHint})
	}
	return out
}

// anthToolChoiceOf is tool_choice, with disable_parallel_tool_use when the
// caller turned parallel calls off; nil when there is nothing to say.
func anthToolChoiceOf(r *canonical.Request) *anthToolChoice {
	tc := &anthToolChoice{}
	switch r.ToolChoice.Mode {
	case canonical.ToolChoiceAuto:
		tc.Type = "auto"
	case canonical.ToolChoiceNone:
		tc.Type = "none"
	case canonical.ToolChoiceRequired:
		tc.Type = "any"
	case canonical.ToolChoiceTool:
		tc.Type, tc.Name = "tool", r.ToolChoice.Name
	}
	if p := r.ParallelToolCalls; p != nil && !*p && len(r.Tools) > 0 && tc.Type != "none" {
		if tc.Type == "" {
			tc.Type = "auto"
		}
		t := true
		tc.DisableParallelToolUse = &t
	}
	if tc.Type != "" && (len(r.Tools) > 0 || tc.Type == "none") {
		return tc
	}
	return nil
}

// anthMaxTokens is the required max_tokens: the caller's, else the
// model's catalog maximum, else DefaultMaxTokens.
func anthMaxTokens(r *canonical.Request, t *Target) int64 {
	switch {
	case r.MaxOutputTokens != nil:
		return *r.MaxOutputTokens
	case t.MaxOutputTokens > 0:
		return t.MaxOutputTokens
	}
	return DefaultMaxTokens
}

// anthThinkingOf is the thinking setting for the caller's reasoning: an
// effort becomes a budget kept below max_tokens.
func anthThinkingOf(rs *canonical.Reasoning, maxTokens int64, x *encoder) (*anthThinking, error) {
	switch {
	case rs == nil:
	case rs.Enabled != nil && *rs.Enabled:
		if rs.Adaptive {
			return &anthThinking{Type: "adaptive"}, nil
		}
		return &anthThinking{Type: "enabled", BudgetTokens: rs.BudgetTokens}, nil
	case rs.Effort != "":
		budget := map[string]int64{"low": 1024, "medium": 4096, "high": 16384, "xhigh": 32768}[rs.Effort]
		switch {
		case rs.Effort == "none" || rs.Effort == "minimal":
		case budget == 0:
			return nil, x.reject(FeatReasoning, "unknown reasoning effort "+strconv.Quote(rs.Effort))
		default:
			budget = min(budget, maxTokens-1)
			if budget < 1024 {
				return nil, x.reject(FeatReasoning, "Anthropic thinking needs max_tokens above 1024")
			}
			return &anthThinking{Type: "enabled", BudgetTokens: budget}, nil
		}
	}
	return nil, nil
}

// anthOutputConfigOf is output_config for a response format: a JSON
// schema is sent, a bare JSON object is up to the matrix.
func anthOutputConfigOf(f *canonical.ResponseFormat, x *encoder) (*anthOutputConfig, error) {
	if f == nil {
		return nil, nil
	}
	switch f.Type {
	case canonical.FormatJSONObject:
		if err := x.check(FeatJSONObject); err != nil {
			return nil, err
		}
	case canonical.FormatJSONSchema:
		return &anthOutputConfig{Format: &anthFormat{Type: "json_schema", Schema: f.Schema}}, nil
	}
	return nil, nil
}

// anthServiceTier maps the caller's tier: auto stays auto, default is
// standard_only, any other tier is dropped.
func anthServiceTier(tier string, x *encoder) string {
	switch tier {
	case "":
	case "auto":
		return "auto"
	case "default":
		return "standard_only"
	default:
		x.drop(FeatServiceTier)
	}
	return ""
}

// anthBlockOf is the user-turn block for a part; ok is false for parts
// that send nothing (empty text).
func anthBlockOf(p *canonical.Part, x *encoder) (anthBlock, bool, error) {
	switch p.Type {
	case canonical.PartText:
		if p.Text == "" {
			return anthBlock{}, false, nil
		}
		t := p.Text
		return anthBlock{Type: "text", Text: &t, CacheControl: p.CacheHint}, true, nil
	case canonical.PartImage:
		img := p.Image
		if img.URL != "" {
			return anthBlock{Type: "image", Source: &anthSource{Type: "url", URL: img.URL}, CacheControl: p.CacheHint}, true, nil
		}
		if !anthropicMedia[img.MediaType] {
			return anthBlock{}, false, x.reject(FeatImageBase64, "Anthropic takes jpeg, png, gif and webp images, not "+strconv.Quote(img.MediaType))
		}
		return anthBlock{Type: "image", Source: &anthSource{Type: "base64", MediaType: img.MediaType, Data: img.Data}, CacheControl: p.CacheHint}, true, nil
	case canonical.PartFile:
		f := p.File
		switch {
		case f.Data != "" && f.MediaType == "application/pdf":
			return anthBlock{Type: "document", Source: &anthSource{Type: "base64", MediaType: f.MediaType, Data: f.Data}, CacheControl: p.CacheHint}, true, nil
		case f.Data != "" && f.MediaType == "text/plain":
			return anthBlock{Type: "document", Source: &anthSource{Type: "text", MediaType: f.MediaType, Data: unb64(f.Data)}, CacheControl: p.CacheHint}, true, nil
		}
		return anthBlock{}, false, x.reject(FeatFileInput, "Anthropic documents are PDF or plain-text data")
	case canonical.PartToolResult:
		tr := p.ToolResult
		b := anthBlock{Type: "tool_result", ToolUseID: anthropicID(tr.CallID), CacheControl: p.CacheHint}
		if tr.IsError {
			t := true
			b.IsError = &t
		}
		if len(tr.Content) == 1 && tr.Content[0].Type == canonical.PartText {
			b.Content, _ = json.Marshal(tr.Content[0].Text)
		} else {
			inner := make([]anthBlock, 0, len(tr.Content))
			for i := range tr.Content {
				ib, ok, err := anthBlockOf(&tr.Content[i], x)
				if err != nil {
					return anthBlock{}, false, err
				}
				if ok {
					inner = append(inner, ib)
				}
			}
			if len(inner) > 0 {
				b.Content, _ = json.Marshal(inner)
			}
		}
		return b, true, nil
	case canonical.PartAudio:
		return anthBlock{}, false, x.check(FeatAudioInput)
	}
	return anthBlock{}, false, nil
}
