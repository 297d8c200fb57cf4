package mockupstream

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Bedrock Converse and ConverseStream, and Anthropic Messages on
// InvokeModel[WithResponseStream].

type converseRequest struct {
	Messages []struct {
		Role    string          `json:"role"`
		Content []converseBlock `json:"content"`
	} `json:"messages"`
	System          []converseBlock `json:"system"`
	InferenceConfig *struct {
		MaxTokens     *int     `json:"maxTokens"`
		Temperature   *float64 `json:"temperature"`
		TopP          *float64 `json:"topP"`
		StopSequences []string `json:"stopSequences"`
	} `json:"inferenceConfig"`
	ToolConfig *struct {
		Tools []struct {
			ToolSpec *struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				InputSchema struct {
					JSON json.RawMessage `json:"json"`
				} `json:"inputSchema"`
			} `json:"toolSpec"`
			CachePoint json.RawMessage `json:"cachePoint"`
		} `json:"tools"`
		ToolChoice *struct {
			Auto json.RawMessage `json:"auto"`
			Any  json.RawMessage `json:"any"`
			Tool *struct {
				Name string `json:"name"`
			} `json:"tool"`
		} `json:"toolChoice"`
	} `json:"toolConfig"`
	Additional      map[string]json.RawMessage `json:"additionalModelRequestFields"`
	RequestMetadata map[string]string          `json:"requestMetadata"`
}

type converseBlock struct {
	Text     *string         `json:"text"`
	Image    json.RawMessage `json:"image"`
	Document json.RawMessage `json:"document"`
	ToolUse  *struct {
		ToolUseID string          `json:"toolUseId"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	} `json:"toolUse"`
	ToolResult *struct {
		ToolUseID string          `json:"toolUseId"`
		Content   []converseBlock `json:"content"`
		Status    string          `json:"status"`
	} `json:"toolResult"`
	ReasoningContent json.RawMessage `json:"reasoningContent"`
	CachePoint       json.RawMessage `json:"cachePoint"`
	JSON             json.RawMessage `json:"json"`
}

func bedrockInvalid(msg string) *apiError { return &apiError{kind: errInvalid, msg: msg} }

// decodeConverse validates a Converse body the way Bedrock does and
// gathers what the reply depends on.
func decodeConverse(body []byte, cv *convo) *apiError {
	var req converseRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return bedrockInvalid("Malformed input request, please reformat your input and try again.")
	}
	if len(req.Messages) == 0 {
		return bedrockInvalid("A conversation must start with a user message. Try again with a conversation that starts with a user message.")
	}
	for _, b := range req.System {
		if b.Text != nil {
			cv.textBytes += len(*b.Text)
		}
	}
	if ic := req.InferenceConfig; ic != nil {
		if ic.MaxTokens != nil {
			if *ic.MaxTokens < 1 {
				return bedrockInvalid("1 validation error detected: Value '" + strconv.Itoa(*ic.MaxTokens) + "' at 'inferenceConfig.maxTokens' failed to satisfy constraint: Member must have value greater than or equal to 1")
			}
			cv.maxTokens, cv.hasMax = *ic.MaxTokens, true
		}
		cv.stops = ic.StopSequences
	}
	if tc := req.ToolConfig; tc != nil {
		for _, t := range tc.Tools {
			if t.ToolSpec == nil {
				continue
			}
			cv.tools = append(cv.tools, toolDef{name: t.ToolSpec.Name, schema: t.ToolSpec.InputSchema.JSON})
			cv.textBytes += len(t.ToolSpec.Name) + len(t.ToolSpec.Description) + len(t.ToolSpec.InputSchema.JSON)
		}
		if ch := tc.ToolChoice; ch != nil {
			switch {
			case ch.Any != nil:
				cv.mode = toolAny
			case ch.Tool != nil:
				cv.mode, cv.forced = toolForced, ch.Tool.Name
			}
		}
	}
	if raw, ok := req.Additional["thinking"]; ok && strings.Contains(string(raw), "enabled") {
		cv.showThinking = true
	}
	var pending []string
	for i, m := range req.Messages {
		at := "messages." + strconv.Itoa(i)
		if m.Role != "user" && m.Role != "assistant" {
			return bedrockInvalid("1 validation error detected: Value '" + m.Role + "' at '" + at + ".member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]")
		}
		if i == 0 && m.Role != "user" {
			return bedrockInvalid("A conversation must start with a user message. Try again with a conversation that starts with a user message.")
		}
		if i > 0 && req.Messages[i-1].Role == m.Role {
			return bedrockInvalid("A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.")
		}
		if len(m.Content) == 0 {
			return bedrockInvalid("The content field in the Message object at " + at + " is empty. Add a ContentBlock object to the content field and try again.")
		}
		cv.messages++
		var answered, calls []string
		var text strings.Builder
		result := false
		for _, b := range m.Content {
			switch {
			case b.Text != nil:
				if strings.TrimSpace(*b.Text) == "" {
					return bedrockInvalid("The text field in the ContentBlock object at " + at + " is blank. Add text to the text field, and try again.")
				}
				cv.textBytes += len(*b.Text)
				text.WriteString(*b.Text)
			case b.ToolUse != nil || b.ToolResult != nil:
				if req.ToolConfig == nil {
					return bedrockInvalid("The toolConfig field must be defined when using toolUse and toolResult content blocks.")
				}
				if b.ToolUse != nil {
					calls = append(calls, b.ToolUse.ToolUseID)
					cv.textBytes += len(b.ToolUse.Name) + len(b.ToolUse.Input)
					continue
				}
				result = true
				answered = append(answered, b.ToolResult.ToolUseID)
				var rt strings.Builder
				for _, c := range b.ToolResult.Content {
					if c.Text != nil {
						rt.WriteString(*c.Text)
					}
					rt.Write(c.JSON)
				}
				cv.textBytes += rt.Len()
				cv.resultText = rt.String()
			case b.Image != nil || b.Document != nil:
				cv.mediaParts++
			}
		}
		for _, id := range pending {
			if !containsString(answered, id) {
				return bedrockInvalid("Expected toolResult blocks at " + at + ".content for the following Ids: " + strings.Join(pending, ", "))
			}
		}
		pending = calls
		switch {
		case m.Role == "assistant":
			cv.last = turnAssistant
		case result:
			cv.last = turnToolResult
		default:
			cv.userText, cv.last = text.String(), turnUser
		}
	}
	if len(pending) > 0 {
		return bedrockInvalid("Expected toolResult blocks for the following Ids: " + strings.Join(pending, ", "))
	}
	return nil
}

type converseUsage struct {
	InputTokens           int `json:"inputTokens"`
	OutputTokens          int `json:"outputTokens"`
	TotalTokens           int `json:"totalTokens"`
	CacheReadInputTokens  int `json:"cacheReadInputTokens,omitempty"`
	CacheWriteInputTokens int `json:"cacheWriteInputTokens,omitempty"`
}

func converseUsageOf(u usage) converseUsage {
	in := u.input - u.cacheRead - u.cacheWrite
	out := u.output + u.reasoning
	return converseUsage{InputTokens: in, OutputTokens: out, TotalTokens: u.input + out, CacheReadInputTokens: u.cacheRead, CacheWriteInputTokens: u.cacheWrite}
}

func converseStop(f finish) string {
	switch f {
	case finishLength:
		return "max_tokens"
	case finishStopSequence:
		return "stop_sequence"
	case finishToolCalls:
		return "tool_use"
	}
	return "end_turn"
}

func (c *call) serveConverse() {
	rp := c.conv.plan(true)
	u := converseUsageOf(rp.usage)
	stop := converseStop(rp.finish)
	ids := make([]string, len(rp.calls))
	for i := range ids {
		ids[i] = randomID("tooluse_", 22, alphaBase62)
	}
	sig := ""
	if len(rp.thinking) > 0 {
		sig = signature()
	}
	if !c.stream {
		var content []any
		if len(rp.thinking) > 0 {
			content = append(content, map[string]any{"reasoningContent": map[string]any{"reasoningText": map[string]string{"text": joinPieces(rp.thinking), "signature": sig}}})
		}
		if rp.text != "" {
			content = append(content, map[string]string{"text": rp.text})
		}
		for i, tc := range rp.calls {
			content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": ids[i], "name": tc.name, "input": json.RawMessage(tc.args)}})
		}
		c.writeJSON(map[string]any{
			"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
			"stopReason": stop, "usage": u,
			"metrics": map[string]int64{"latencyMs": time.Since(c.received).Milliseconds()},
		})
		return
	}
	if !c.beginStream(eventStreamContentType, frameEventStream) {
		return
	}
	if !c.send("messageStart", map[string]string{"p": padding(c.events), "role": "assistant"}) {
		return
	}
	index := 0
	delta := func(d any) bool {
		return c.send("contentBlockDelta", map[string]any{"contentBlockIndex": index, "delta": d, "p": padding(c.events)})
	}
	stopBlock := func() bool {
		ok := c.send("contentBlockStop", map[string]any{"contentBlockIndex": index, "p": padding(c.events)})
		index++
		return ok
	}
	if len(rp.thinking) > 0 {
		for _, p := range rp.thinking {
			if !delta(map[string]any{"reasoningContent": map[string]string{"text": p}}) {
				return
			}
		}
		if !delta(map[string]any{"reasoningContent": map[string]string{"signature": sig}}) || !stopBlock() {
			return
		}
	}
	if len(rp.pieces) > 0 {
		for _, p := range rp.pieces {
			if !delta(map[string]string{"text": p}) {
				return
			}
		}
		if !stopBlock() {
			return
		}
	}
	for i, tc := range rp.calls {
		if !c.send("contentBlockStart", map[string]any{"contentBlockIndex": index, "start": map[string]any{"toolUse": map[string]string{"toolUseId": ids[i], "name": tc.name}}, "p": padding(c.events)}) {
			return
		}
		for _, p := range tc.pieces {
			if !delta(map[string]any{"toolUse": map[string]string{"input": p}}) {
				return
			}
		}
		if !stopBlock() {
			return
		}
	}
	if !c.send("messageStop", map[string]string{"p": padding(c.events), "stopReason": stop}) {
		return
	}
	c.send("metadata", map[string]any{"metrics": map[string]int64{"latencyMs": time.Since(c.received).Milliseconds()}, "p": padding(c.events), "usage": u})
}

// decodeInvoke reads an Anthropic Messages body sent to InvokeModel: the
// model comes from the path, anthropic_version must be Bedrock's, betas
// come as anthropic_beta in the body.
func (c *call) decodeInvoke(body []byte) {
	c.anth = &anthropicRequest{}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		c.derr = bedrockInvalid("Malformed input request, please reformat your input and try again.")
		return
	}
	var version string
	_ = json.Unmarshal(top["anthropic_version"], &version)
	switch {
	case version == "":
		c.derr = bedrockInvalid("Malformed input request: #: required key [anthropic_version] not found, please reformat your input and try again.")
		return
	case version != "bedrock-2023-05-31" && !isAPIDate(version):
		// bedrock-2023-05-31, or an Anthropic API version date, which
		// anthropic-sdk-go's Bedrock option moves from its header.
		c.derr = bedrockInvalid("Invalid API version: " + version)
		return
	}
	for _, k := range []string{"model", "stream"} {
		if _, ok := top[k]; ok {
			c.derr = bedrockInvalid("Malformed input request: #: extraneous key [" + k + "] is not permitted, please reformat your input and try again.")
			return
		}
	}
	var betas []string
	if raw, ok := top["anthropic_beta"]; ok && json.Unmarshal(raw, &betas) != nil {
		c.derr = bedrockInvalid("Malformed input request: #/anthropic_beta: expected type: JSONArray, please reformat your input and try again.")
		return
	}
	delete(top, "anthropic_version")
	delete(top, "anthropic_beta")
	top["model"], _ = json.Marshal(c.model)
	inner, _ := json.Marshal(top)
	model := c.model
	c.anth, c.derr = decodeAnthropic(inner, &c.conv, false, len(betas) > 0)
	if c.derr != nil {
		c.derr.kind = errInvalid
	}
	c.model, c.anth.Stream = model, c.stream
}

// chunk wraps one Anthropic stream event as InvokeModelWithResponseStream
// sends it: {"bytes": base64 of the event's JSON}.
func chunk(event []byte) []byte {
	b, _ := json.Marshal(map[string]string{"bytes": base64.StdEncoding.EncodeToString(event), "p": padding(len(event))})
	return b
}

// isAPIDate reports whether v is an API version date, YYYY-MM-DD.
func isAPIDate(v string) bool {
	_, err := time.Parse("2006-01-02", v)
	return err == nil
}
