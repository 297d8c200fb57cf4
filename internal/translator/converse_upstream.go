package translator

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/relay-llm/relay/internal/canonical"
)

// AWS Bedrock Converse, upstream side: encode a request for the
// bedrock_converse shape.

var converseSupport = supportTable{
	FeatSystemMid:       {Emulated, "hoisted into system in order (Converse has no system turns); the position is lost"},
	FeatSameRoleTurns:   {Emulated, "merged into one message; tool results regrouped right after their calls"},
	FeatMessageName:     {Rejected, "Converse messages have no participant name"},
	FeatImageBase64:     {Yes, "image blocks with source.bytes: png, jpeg, gif and webp; other media types are rejected"},
	FeatImageURL:        {Rejected, "Converse takes image bytes (or S3 locations), not URLs; send the image as base64"},
	FeatImageDetail:     {Rejected, "Converse has no image detail level (auto is accepted)"},
	FeatAudioInput:      {Rejected, "Converse takes no audio"},
	FeatFileInput:       {Yes, "document blocks with source.bytes: pdf, txt, csv, html and md; file ids and URLs are rejected"},
	FeatToolStrict:      {Rejected, "Converse tool specs have no strict mode"},
	FeatToolChoice:      {Emulated, "auto, required and a named tool → toolChoice auto, any and tool; none leaves the tools out (refused when the history holds tool calls, since Converse then needs toolConfig)"},
	FeatParallelOff:     {Dropped, "Converse cannot be told to call one tool at a time"},
	FeatToolHistory:     {Yes, "toolUse and toolResult blocks; ids are kept (or hashed into toolUseId's alphabet); tools named only in the history are declared with an open schema, as Converse requires"},
	FeatToolResultError: {Yes, "toolResult.status error"},
	FeatToolResultImage: {Yes, "image blocks inside toolResult.content"},
	FeatThinkingHistory: {Yes, "signed reasoning is replayed as reasoningContent (Claude models); unsigned or foreign reasoning is dropped"},
	FeatReasoning:       {Emulated, "additionalModelRequestFields.thinking, as for Anthropic (Claude models on Bedrock): efforts low, medium, high, xhigh → budget_tokens 1024, 4096, 16384, 32768 below maxTokens"},
	FeatMaxTokens:       {Yes, "inferenceConfig.maxTokens"},
	FeatTopK:            {Emulated, "additionalModelRequestFields.top_k, the name Claude and Mistral models take on Bedrock"},
	FeatStop:            {Yes, "inferenceConfig.stopSequences"},
	FeatN:               {Rejected, "Converse returns one answer per request"},
	FeatLogprobs:        {Rejected, "Converse returns no log probabilities"},
	FeatLogitBias:       {Rejected, "Converse has no logit bias"},
	FeatSeed:            {Rejected, "Converse has no seed"},
	FeatPenalties:       {Rejected, "Converse has no presence or frequency penalty"},
	FeatJSONObject:      {Rejected, "Converse has no JSON mode; ask for a tool call instead"},
	FeatJSONSchema:      {Rejected, "Converse has no structured output setting; ask for a tool call instead"},
	FeatVerbosity:       {Rejected, "Converse has no verbosity setting"},
	FeatMetadata:        {Yes, "requestMetadata (Bedrock's invocation-log filters)"},
	FeatUser:            {Dropped, "Converse has no end-user id"},
	FeatServiceTier:     {Dropped, "Converse has no service tier Relay maps"},
	FeatStore:           {Rejected, "Bedrock does not store completions"},
	FeatPromptCacheKey:  {Dropped, "Bedrock caches by cachePoint blocks, not keys"},
	FeatCacheControl:    {Emulated, "each cache_control breakpoint becomes a cachePoint block right after its part (Claude and Nova models)"},
	FeatPrefill:         {Yes, "Converse continues a final assistant message (Claude models)"},
	FeatStreaming:       {Yes, "ConverseStream's event-stream messages (messageStart, contentBlockStart/Delta/Stop, messageStop, metadata) become the caller's events; metadata brings the usage"},
}

// converseUpstream speaks Converse to the binding.
type converseUpstream struct {
	now   time.Time
	id    string // Converse answers carry no id: Relay mints one per answer
	model string // nor the model: the binding's upstream model

	// Stream state.
	started  bool
	blocks   map[int]int // contentBlockIndex → canonical part index
	kinds    map[int]canonical.PartType
	next     int
	finished bool // messageStop came
	done     bool // metadata came after it
	calls    bool
	finish   canonical.FinishReason
}

func newConverseUpstream(now time.Time) upstream {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return &converseUpstream{now: now, id: "bedrock" + hex.EncodeToString(b[:])}
}

func (u *converseUpstream) answersAs(model string) { u.model = model }

// path is /model/{modelId}/converse[-stream]. The model id (which may be
// an ARN with ":" and "/") is escaped like AWS's SDKs escape it, every
// byte but the unreserved ones, so the path on the wire is the one the
// signature covers.
func (u *converseUpstream) path(t *Target, stream bool) string {
	p := "/model/" + escapeModelID(t.UpstreamModel)
	if stream {
		return p + "/converse-stream"
	}
	return p + "/converse"
}

// escapeModelID percent-encodes a Bedrock model id for one path segment.
func escapeModelID(id string) string {
	const hexdig = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexdig[c>>4])
		b.WriteByte(hexdig[c&15])
	}
	return b.String()
}

func (u *converseUpstream) encode(dst []byte, x *encoder) ([]byte, error) {
	r := x.r
	if err := commonChecks(x); err != nil {
		return dst, err
	}
	var q cvRequest
	system, msgs := r.HoistedSystem()
	for _, p := range system {
		if p.Text != "" {
			q.System = append(q.System, cvSystemBlock{Text: p.Text})
		}
		if p.CacheHint != nil {
			q.System = append(q.System, cvSystemBlock{CachePoint: &cvCachePoint{Type: "default"}})
		}
	}
	grouped := canonical.GroupToolResults(msgs)
	var err error
	if q.Messages, err = cvMessages(grouped, x); err != nil {
		return dst, err
	}
	if len(q.Messages) == 0 {
		return dst, badField("messages", "no message has content Converse can take")
	}
	if q.ToolConfig, err = cvToolConfigOf(r, grouped, x); err != nil {
		return dst, err
	}
	inf := cvInference{MaxTokens: r.MaxOutputTokens, Temperature: r.Temperature, TopP: r.TopP, StopSequences: r.Stop}
	if r.TopK != nil {
		q.Additional = map[string]any{"top_k": *r.TopK}
	}
	maxTokens := anthMaxTokens(r, x.t)
	thinking, err := anthThinkingOf(r.Reasoning, maxTokens, x)
	if err != nil {
		return dst, err
	}
	if thinking != nil {
		if q.Additional == nil {
			q.Additional = map[string]any{}
		}
		q.Additional["thinking"] = thinking
		inf.MaxTokens = &maxTokens // the budget is below it, so it must be sent
	}
	if inf.MaxTokens != nil || inf.Temperature != nil || inf.TopP != nil || len(inf.StopSequences) > 0 {
		q.InferenceConfig = &inf
	}
	if len(r.Metadata) > 0 {
		q.RequestMetadata = r.Metadata
	}
	b, err := json.Marshal(&q)
	if err != nil {
		return dst, fmt.Errorf("encode converse request: %w", err)
	}
	return append(dst, b...), nil
}

// cvMessages are the Converse messages for msgs: user and tool messages
// make user messages, assistant messages assistant ones, and neighbours
// of one role merge into one message.
func cvMessages(msgs []canonical.Message, x *encoder) ([]cvMessage, error) {
	var out []cvMessage
	docs := 0
	for i := range msgs {
		m := &msgs[i]
		var (
			role string
			bs   []cvBlock
			err  error
		)
		switch m.Role {
		case canonical.RoleUser, canonical.RoleTool:
			role = "user"
			bs, err = cvUserBlocks(m.Parts, &docs, x)
		case canonical.RoleAssistant:
			role = "assistant"
			bs, err = cvAssistantBlocks(m.Parts)
		default:
			continue
		}
		if err != nil {
			return nil, err
		}
		if len(bs) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, bs...)
		} else {
			out = append(out, cvMessage{Role: role, Content: bs})
		}
	}
	return out, nil
}

var cachePoint = cvBlock{CachePoint: &cvCachePoint{Type: "default"}}

// cvUserBlocks are a user (or tool) message's parts as content blocks,
// each cache hint a cachePoint after its part.
func cvUserBlocks(parts []canonical.Part, docs *int, x *encoder) ([]cvBlock, error) {
	var bs []cvBlock
	for j := range parts {
		p := &parts[j]
		b, ok, err := cvUserBlock(p, docs, x)
		if err != nil {
			return nil, err
		}
		if ok {
			bs = append(bs, b)
		}
		if p.CacheHint != nil && len(bs) > 0 {
			bs = append(bs, cachePoint)
		}
	}
	return bs, nil
}

func cvUserBlock(p *canonical.Part, docs *int, x *encoder) (cvBlock, bool, error) {
	switch p.Type {
	case canonical.PartText:
		if p.Text == "" {
			return cvBlock{}, false, nil
		}
		t := p.Text
		return cvBlock{Text: &t}, true, nil
	case canonical.PartImage:
		img, err := cvImageOf(p.Image, x)
		return cvBlock{Image: img}, err == nil, err
	case canonical.PartFile:
		f := p.File
		format := converseDocFormat(f.MediaType)
		if f.Data == "" || format == "" {
			return cvBlock{}, false, x.reject(FeatFileInput, "Converse takes pdf, txt, csv, html or md data inline, not file ids or URLs")
		}
		*docs++
		return cvBlock{Document: &cvDocument{Format: format, Name: converseDocName(f.Filename, *docs), Source: cvSource{Bytes: f.Data}}}, true, nil
	case canonical.PartToolResult:
		tr, err := cvToolResultOf(p.ToolResult, x)
		return cvBlock{ToolResult: tr}, err == nil, err
	}
	return cvBlock{}, false, nil
}

func cvImageOf(img *canonical.Image, x *encoder) (*cvImage, error) {
	if img.URL != "" {
		return nil, x.check(FeatImageURL)
	}
	format := converseImageFormat(img.MediaType)
	if format == "" {
		return nil, x.reject(FeatImageBase64, "Converse takes png, jpeg, gif and webp images, not "+img.MediaType)
	}
	return &cvImage{Format: format, Source: cvSource{Bytes: img.Data}}, nil
}

func cvToolResultOf(tr *canonical.ToolResult, x *encoder) (*cvToolResult, error) {
	out := &cvToolResult{ToolUseID: converseID(tr.CallID), Status: "success"}
	if tr.IsError {
		out.Status = "error"
	}
	for i := range tr.Content {
		p := &tr.Content[i]
		switch p.Type {
		case canonical.PartText:
			t := p.Text
			out.Content = append(out.Content, cvBlock{Text: &t})
		case canonical.PartImage:
			img, err := cvImageOf(p.Image, x)
			if err != nil {
				return nil, err
			}
			out.Content = append(out.Content, cvBlock{Image: img})
		}
	}
	if len(out.Content) == 0 {
		empty := ""
		out.Content = []cvBlock{{Text: &empty}}
	}
	return out, nil
}

// cvAssistantBlocks are an assistant message's text, tool calls and
// signed reasoning.
func cvAssistantBlocks(parts []canonical.Part) ([]cvBlock, error) {
	var bs []cvBlock
	for j := range parts {
		p := &parts[j]
		switch p.Type {
		case canonical.PartText, canonical.PartRefusal:
			if p.Text != "" {
				t := p.Text
				bs = append(bs, cvBlock{Text: &t})
			}
		case canonical.PartToolCall:
			args, ok := argsObject(p.ToolCall.Arguments)
			if !ok {
				return nil, badField("messages[].tool_calls[].function.arguments", "the arguments of tool call %q are not a JSON object", p.ToolCall.ID)
			}
			bs = append(bs, cvBlock{ToolUse: &cvToolUse{ToolUseID: converseID(p.ToolCall.ID), Name: p.ToolCall.Name, Input: args}})
		case canonical.PartThinking:
			if p.Origin == canonical.OriginAnthropic && p.Signature != "" {
				bs = append(bs, cvBlock{ReasoningContent: &cvReasoning{ReasoningText: &cvReasoningText{Text: p.Text, Signature: p.Signature}}})
			}
		case canonical.PartRedactedThinking:
			if p.Origin == canonical.OriginAnthropic && p.Signature != "" {
				bs = append(bs, cvBlock{ReasoningContent: &cvReasoning{RedactedContent: p.Signature}})
			}
		}
		if p.CacheHint != nil && len(bs) > 0 {
			bs = append(bs, cachePoint)
		}
	}
	return bs, nil
}

// cvToolConfigOf is the toolConfig: the caller's tools, plus any tool the
// history names that the caller did not declare (Converse refuses toolUse
// blocks without a toolConfig naming them).
func cvToolConfigOf(r *canonical.Request, msgs []canonical.Message, x *encoder) (*cvToolConfig, error) {
	history := false
	declared := map[string]bool{}
	var tools []cvTool
	for _, t := range r.Tools {
		schema := t.Parameters
		if len(schema) == 0 || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		tools = append(tools, cvTool{ToolSpec: &cvToolSpec{Name: t.Name, Description: t.Description, InputSchema: cvInputSchema{JSON: schema}}})
		if t.CacheHint != nil {
			tools = append(tools, cvTool{CachePoint: &cvCachePoint{Type: "default"}})
		}
		declared[t.Name] = true
	}
	for i := range msgs {
		for _, p := range msgs[i].Parts {
			if p.Type == canonical.PartToolResult {
				history = true
			}
			if p.Type == canonical.PartToolCall && p.ToolCall != nil {
				history = true
				if !declared[p.ToolCall.Name] {
					declared[p.ToolCall.Name] = true
					tools = append(tools, cvTool{ToolSpec: &cvToolSpec{Name: p.ToolCall.Name, InputSchema: cvInputSchema{JSON: json.RawMessage(`{"type":"object"}`)}}})
				}
			}
		}
	}
	var choice *cvToolChoice
	switch r.ToolChoice.Mode {
	case canonical.ToolChoiceNone:
		if history {
			return nil, x.reject(FeatToolChoice, "tool_choice none cannot be sent with tool calls in the history, which need Converse's toolConfig")
		}
		return nil, nil
	case canonical.ToolChoiceAuto:
		choice = &cvToolChoice{Auto: &struct{}{}}
	case canonical.ToolChoiceRequired:
		choice = &cvToolChoice{Any: &struct{}{}}
	case canonical.ToolChoiceTool:
		choice = &cvToolChoice{Tool: &cvToolName{Name: r.ToolChoice.Name}}
	}
	if len(tools) == 0 {
		return nil, nil
	}
	return &cvToolConfig{Tools: tools, ToolChoice: choice}, nil
}
