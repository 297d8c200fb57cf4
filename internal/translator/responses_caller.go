package translator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/relay-llm/relay/internal/canonical"
)

// OpenAI Responses, caller side: decode a Responses request, and refuse
// the state the proxy did not expand (Relay keeps the rest: respstore).

func decodeResponsesRequest(body []byte, r *canonical.Request) error {
	var q respCallerRequest
	if err := decodeStrict(body, &q); err != nil {
		return err
	}
	switch {
	case q.Model == "":
		return badField("model", "a model is required")
	case q.Background != nil && *q.Background:
		return unsupported("background", "background responses are stored and polled")
	case !isNull(q.Prompt):
		return unsupported("prompt", "stored prompt templates")
	case q.MaxToolCalls != nil:
		return unsupported("max_tool_calls", "")
	case q.TopLogprobs != nil:
		return unsupported("top_logprobs", "Relay does not map log probabilities")
	case q.Truncation != "" && q.Truncation != "disabled":
		return unsupported("truncation", "only disabled: Relay does not drop input items")
	case isNull(q.Input) && q.PreviousResponseID == nil && isNull(q.Conversation):
		return badField("input", "input is required")
	}
	r.Model = q.Model
	if present(q.ClientMetadata) {
		advise(r, "client_metadata", "client_metadata")
	}
	if present(q.PromptCacheRetention) {
		advise(r, "prompt_cache_retention", "prompt_cache_retention")
	}
	if !isNull(q.Instructions) {
		var s string
		if err := json.Unmarshal(q.Instructions, &s); err != nil {
			return unsupported("instructions", "instructions as input items; send a string")
		}
		if s != "" {
			r.System = append(r.System, canonical.Part{Type: canonical.PartText, Text: s})
		}
	}
	if err := respInput(q.Input, r); err != nil {
		return err
	}
	if err := respTools(q.Tools, "tools", r, true); err != nil {
		return err
	}
	if err := respToolChoice(q.ToolChoice, &r.ToolChoice); err != nil {
		return err
	}
	r.ParallelToolCalls = q.ParallelToolCalls
	r.MaxOutputTokens = q.MaxOutputTokens
	r.Temperature, r.TopP = q.Temperature, q.TopP
	if err := decodeRespText(q.Text, r); err != nil {
		return err
	}
	r.Reasoning = decodeRespReasoning(q.Reasoning)
	if len(q.Metadata) > 0 {
		r.Metadata = q.Metadata
	}
	r.User = q.SafetyIdentifier
	if r.User == "" {
		r.User = q.User
	}
	r.PromptCacheKey, r.ServiceTier = q.PromptCacheKey, q.ServiceTier
	if err := decodeRespState(&q, r); err != nil {
		return err
	}
	r.Stream = q.Stream
	return nil
}

// decodeRespText reads text: its format and verbosity.
func decodeRespText(t *respText, r *canonical.Request) error {
	if t == nil {
		return nil
	}
	if f := t.Format; f != nil {
		switch f.Type {
		case "text":
		case "json_object":
			r.ResponseFormat = &canonical.ResponseFormat{Type: canonical.FormatJSONObject}
		case "json_schema":
			if isNull(f.Schema) {
				return badField("text.format.schema", "a json_schema format needs a schema")
			}
			r.ResponseFormat = &canonical.ResponseFormat{Type: canonical.FormatJSONSchema, Name: f.Name, Description: f.Description, Schema: f.Schema, Strict: f.Strict}
		default:
			return badField("text.format.type", "unknown type %q", f.Type)
		}
	}
	r.Verbosity = t.Verbosity
	return nil
}

// decodeRespReasoning reads reasoning: an effort and a summary (or the
// deprecated generate_summary); nil when it says neither.
func decodeRespReasoning(rs *respReasoningIn) *canonical.Reasoning {
	if rs == nil {
		return nil
	}
	c := &canonical.Reasoning{}
	if rs.Effort != nil {
		c.Effort = *rs.Effort
	}
	switch {
	case rs.Summary != nil:
		c.Summary = *rs.Summary
	case rs.GenerateSummary != nil:
		c.Summary = *rs.GenerateSummary
	}
	if c.Effort != "" || c.Summary != "" {
		return c
	}
	return nil
}

// decodeRespState reads the Responses-only state (store, include,
// previous_response_id, conversation); r.State stays nil when the caller
// sent none of it. Which bindings can serve it is statelessUpstream's
// business.
func decodeRespState(q *respCallerRequest, r *canonical.Request) error {
	var include []string
	for _, inc := range q.Include {
		if inc == "reasoning.encrypted_content" {
			include = append(include, inc)
		} else {
			advise(r, "include", "include")
		}
	}
	st := &canonical.State{Store: q.Store, Include: include}
	if q.PreviousResponseID != nil {
		st.PreviousResponseID = *q.PreviousResponseID
		if st.PreviousResponseID == "" {
			return badField("previous_response_id", "an empty response id")
		}
	}
	if !isNull(q.Conversation) {
		var id string
		if json.Unmarshal(q.Conversation, &id) != nil {
			var obj struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(q.Conversation, &obj) != nil || obj.ID == "" {
				return badField("conversation", "expected a conversation id or {\"id\": …}")
			}
			id = obj.ID
		}
		st.Conversation = id
	}
	if st.Store != nil || st.PreviousResponseID != "" || st.Conversation != "" || len(st.Include) > 0 {
		r.State = st
	}
	return nil
}

// respTools reads the tools at at: function tools, and the function tools
// of a namespace under their own names (a namespace inside a namespace is
// refused, as is a name two tools share). OpenAI's hosted web search is
// advisory (Codex offers it by default): the model answers without it.
// Other hosted tools run only on OpenAI's servers and are refused, naming
// the tool.
func respTools(raw []json.RawMessage, at string, r *canonical.Request, top bool) error {
	for i, raw := range raw {
		at := at + "[" + strconv.Itoa(i) + "]"
		var t respToolIn
		var typ struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(raw, &typ); err != nil {
			return badField(at, "a tool is an object")
		}
		switch typ.Type {
		case "function":
		case "namespace":
			if !top {
				return unsupported(at+".type", "a namespace inside a namespace")
			}
			if err := strictUnmarshal(raw, &t, at); err != nil {
				return err
			}
			from := len(r.Tools)
			if err := respTools(t.Tools, at+".tools", r, false); err != nil {
				return err
			}
			for i := from; i < len(r.Tools); i++ {
				r.Tools[i].Namespace = t.Name
			}
			continue
		case "web_search", "web_search_preview", "web_search_2025_08_26", "web_search_preview_2025_03_11":
			if top {
				advise(r, "tools[].type=web_search", at+".type")
				continue
			}
			fallthrough
		default:
			return unsupported(at+".type", fmt.Sprintf("the hosted tool %q runs only on OpenAI's servers (a model bound in shape openai_responses); only function tools translate", typ.Type))
		}
		if err := strictUnmarshal(raw, &t, at); err != nil {
			return err
		}
		if t.Name == "" {
			return badField(at+".name", "a function tool needs a name")
		}
		if len(t.Tools) > 0 {
			return badField(at+".tools", "only a namespace holds tools")
		}
		for _, have := range r.Tools {
			if have.Name == t.Name {
				return badField(at+".name", "two tools are named %q (a namespace's tools are offered by their own names)", t.Name)
			}
		}
		r.Tools = append(r.Tools, canonical.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict})
	}
	return nil
}

// respInput reads input: a string (one user message) or items. Leading
// system and developer messages join the system prompt; consecutive
// assistant-side items (reasoning, assistant messages, function calls)
// make one assistant message, consecutive function outputs one tool
// message.
func respInput(raw json.RawMessage, r *canonical.Request) error {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return nil
	}
	if s, ok, err := textContent(raw, "input"); ok {
		if err != nil {
			return err
		}
		r.Messages = append(r.Messages, canonical.Message{Role: canonical.RoleUser, Parts: []canonical.Part{{Type: canonical.PartText, Text: s}}})
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return badField("input", "expected a string or an array of input items")
	}
	if len(items) == 0 {
		return badField("input", "at least one input item is required")
	}
	leading := true
	for i, rawItem := range items {
		at := "input[" + strconv.Itoa(i) + "]"
		var it respInItem
		if err := strictUnmarshal(rawItem, &it, at); err != nil {
			return err
		}
		typ := it.Type
		if typ == "" && it.Role != "" {
			typ = "message"
		}
		if typ != "message" || it.Role != "system" && it.Role != "developer" {
			leading = false
		}
		if err := respInputItem(&it, typ, at, leading, r); err != nil {
			return err
		}
	}
	return nil
}

// respInputItem reads one input item, at at, by its type.
func respInputItem(it *respInItem, typ, at string, leading bool, r *canonical.Request) error {
	switch typ {
	case "message":
		return respMessageIn(it, at, leading, r)
	case "function_call":
		if it.CallID == "" || it.Name == "" {
			return badField(at, "a function_call needs a call_id and a name")
		}
		if present(it.ParsedArguments) {
			advise(r, "input[].parsed_arguments", at+".parsed_arguments")
		}
		args := ""
		if it.Arguments != nil {
			args = *it.Arguments
		}
		m := lastMessage(r, canonical.RoleAssistant)
		m.Parts = append(m.Parts, canonical.Part{Type: canonical.PartToolCall, ToolCall: &canonical.ToolCall{
			ID: canonicalID(chatCallPrefix, it.CallID), ItemID: it.ID, Name: it.Name, Arguments: args,
		}})
	case "function_call_output":
		if it.CallID == "" {
			return badField(at+".call_id", "a function_call_output needs the call_id of the call it answers")
		}
		content, err := respOutput(it.Output, at+".output", r)
		if err != nil {
			return err
		}
		m := lastMessage(r, canonical.RoleTool)
		m.Parts = append(m.Parts, canonical.Part{Type: canonical.PartToolResult, ToolResult: &canonical.ToolResult{
			CallID: canonicalID(chatCallPrefix, it.CallID), Content: content,
		}})
	case "reasoning":
		m := lastMessage(r, canonical.RoleAssistant)
		m.Parts = append(m.Parts, respReasoningPart(it))
	case "item_reference":
		// The proxy replaces the references it finds with their items.
		return unsupported(at+".type", "item references point at stored items; send the items themselves")
	default:
		return unsupported(at+".type", fmt.Sprintf("input items of type %q", typ))
	}
	return nil
}

// lastMessage is the last message when it has role, else a new one.
func lastMessage(r *canonical.Request, role canonical.Role) *canonical.Message {
	if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == role {
		return &r.Messages[n-1]
	}
	r.Messages = append(r.Messages, canonical.Message{Role: role})
	return &r.Messages[len(r.Messages)-1]
}

// respMessageIn reads a message item: leading system and developer
// messages join the system prompt, an assistant message joins the
// assistant-side items around it.
func respMessageIn(it *respInItem, at string, leading bool, r *canonical.Request) error {
	switch it.Role {
	case "system", "developer":
		parts, err := respContent(it.Content, at+".content", false, r)
		if err != nil {
			return err
		}
		if leading {
			r.System = append(r.System, parts...)
		} else {
			r.Messages = append(r.Messages, canonical.Message{Role: canonical.RoleSystem, Parts: parts})
		}
	case "user":
		parts, err := respContent(it.Content, at+".content", true, r)
		if err != nil {
			return err
		}
		r.Messages = append(r.Messages, canonical.Message{Role: canonical.RoleUser, Parts: parts})
	case "assistant":
		parts, err := respContent(it.Content, at+".content", false, r)
		if err != nil {
			return err
		}
		m := lastMessage(r, canonical.RoleAssistant)
		m.Parts = append(m.Parts, parts...)
	default:
		return badField(at+".role", "unknown role %q", it.Role)
	}
	return nil
}

// respReasoningPart is a reasoning item as thinking: its summaries joined
// by blank lines, its encrypted content the signature — Anthropic's when
// Relay marked it so on the way out.
func respReasoningPart(it *respInItem) canonical.Part {
	p := canonical.Part{Type: canonical.PartThinking, Origin: canonical.OriginOpenAI}
	var text strings.Builder
	for j, s := range it.Summary {
		if j > 0 {
			text.WriteString("\n\n")
		}
		text.WriteString(s.Text)
	}
	p.Text = text.String()
	if it.EncryptedContent != nil {
		enc := *it.EncryptedContent
		switch {
		case strings.HasPrefix(enc, respAnthropicRedacted):
			p = canonical.Part{Type: canonical.PartRedactedThinking, Signature: enc[len(respAnthropicRedacted):], Origin: canonical.OriginAnthropic}
		case strings.HasPrefix(enc, respAnthropicThinking):
			p.Signature, p.Origin = enc[len(respAnthropicThinking):], canonical.OriginAnthropic
		default:
			p.Signature = enc
		}
	}
	return p
}

// respContent reads a message's content: a string or parts. Media parts
// are allowed in user messages only.
func respContent(raw json.RawMessage, at string, media bool, r *canonical.Request) ([]canonical.Part, error) {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return nil, badField(at, "a message needs content")
	}
	if s, ok, err := textContent(raw, at); ok {
		if err != nil {
			return nil, err
		}
		return []canonical.Part{{Type: canonical.PartText, Text: s}}, nil
	}
	var parts []respInPart
	if err := strictUnmarshal(raw, &parts, at); err != nil {
		return nil, err
	}
	out := make([]canonical.Part, 0, len(parts))
	for i := range parts {
		if present(parts[i].Annotations) {
			advise(r, "input[].content[].annotations", at+"["+strconv.Itoa(i)+"].annotations")
		}
		if present(parts[i].Parsed) {
			advise(r, "input[].content[].parsed", at+"["+strconv.Itoa(i)+"].parsed")
		}
		if present(parts[i].Logprobs) {
			advise(r, "input[].content[].logprobs", at+"["+strconv.Itoa(i)+"].logprobs")
		}
		p, err := respPart(&parts[i], at+"["+strconv.Itoa(i)+"]", media)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func respPart(p *respInPart, at string, media bool) (canonical.Part, error) {
	switch p.Type {
	case "input_text", "output_text":
		if p.Text == nil {
			return canonical.Part{}, badField(at+".text", "a text part needs text")
		}
		return canonical.Part{Type: canonical.PartText, Text: *p.Text}, nil
	case "refusal":
		if p.Refusal == nil {
			return canonical.Part{}, badField(at+".refusal", "a refusal part needs its text")
		}
		return canonical.Part{Type: canonical.PartRefusal, Text: *p.Refusal}, nil
	case "input_image":
		if !media {
			return canonical.Part{}, badField(at+".type", "images are allowed in user messages and function outputs only")
		}
		if p.FileID != "" {
			return canonical.Part{}, unsupported(at+".file_id", "uploaded image files live on OpenAI's servers; send the image as a data URI or URL")
		}
		if p.ImageURL == nil || *p.ImageURL == "" {
			return canonical.Part{}, badField(at+".image_url", "an input_image needs an image_url")
		}
		img := &canonical.Image{Detail: p.Detail}
		if mt, data, ok := parseDataURI(*p.ImageURL); ok {
			img.MediaType, img.Data = mt, data
		} else if strings.HasPrefix(*p.ImageURL, "data:") {
			return canonical.Part{}, badField(at+".image_url", "a data URI must be data:<media type>;base64,<data>")
		} else {
			img.URL = *p.ImageURL
		}
		return canonical.Part{Type: canonical.PartImage, Image: img}, nil
	case "input_file":
		if !media {
			return canonical.Part{}, badField(at+".type", "files are allowed in user messages only")
		}
		f := &canonical.File{FileID: p.FileID, Filename: p.Filename, URL: p.FileURL}
		if mt, data, ok := parseDataURI(p.FileData); ok {
			f.MediaType, f.Data = mt, data
		} else if p.FileData != "" {
			f.Data = p.FileData
		}
		if f.FileID == "" && f.Data == "" && f.URL == "" {
			return canonical.Part{}, badField(at, "an input_file needs file_data, file_id or file_url")
		}
		if f.URL != "" {
			return canonical.Part{}, unsupported(at+".file_url", "send the file as file_data")
		}
		return canonical.Part{Type: canonical.PartFile, File: f}, nil
	}
	return canonical.Part{}, badField(at+".type", "unknown content part type %q", p.Type)
}

// respOutput reads a function_call_output's output: a string or parts.
func respOutput(raw json.RawMessage, at string, r *canonical.Request) ([]canonical.Part, error) {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return nil, badField(at, "a function_call_output needs an output")
	}
	return respContent(raw, at, true, r)
}

func respToolChoice(raw json.RawMessage, tc *canonical.ToolChoice) error {
	if isNull(raw) {
		return nil
	}
	if ok, err := toolChoiceMode(raw, tc); ok {
		return err
	}
	var named struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &named) != nil || named.Type != "function" {
		return unsupported("tool_choice", "only none, auto, required or a named function")
	}
	if err := strictUnmarshal(raw, &named, "tool_choice"); err != nil {
		return err
	}
	if named.Name == "" {
		return badField("tool_choice.name", "a named tool choice needs a name")
	}
	tc.Mode, tc.Name = canonical.ToolChoiceTool, named.Name
	return nil
}

// Responses state for the bindings that keep none: the proxy keeps it
// (package respstore). store (true by default) is served by Relay storing
// the answer under State.ID; previous_response_id and item references are
// expanded by the proxy into the input before decoding (State.Expanded).
// What the proxy did not expand is refused, conversation included: the
// proxy serves the Conversations API and expands a conversation first.

// statelessUpstream wraps the upstream side of a responses→* pair with the
// checks of Responses-only request state.
type statelessUpstream struct {
	upstream
}

func (s statelessUpstream) encode(dst []byte, x *encoder) ([]byte, error) {
	if st := x.r.State; st != nil {
		if st.PreviousResponseID != "" && !st.Expanded {
			return dst, rejectField(x.in, "previous_response_id", x.t, "Relay keeps no state to continue from here; send the whole conversation as input")
		}
		if st.Conversation != "" {
			return dst, rejectField(x.in, "conversation", x.t, x.pair.support(FeatState).note)
		}
	}
	return s.upstream.encode(dst, x)
}

func newStatelessUpstream(inner func(time.Time) upstream) func(time.Time) upstream {
	return func(now time.Time) upstream { return statelessUpstream{upstream: inner(now)} }
}

// withState adds what every responses→* pair says about Responses state
// to the pair's own departures.
func withState(t supportTable) supportTable {
	t[FeatState] = supportNote{Rejected, "Relay serves the Conversations API itself and puts the items of a conversation into the input before translation (docs/inference-api.md); a conversation that reaches a translation unexpanded is refused"}
	t[FeatStore] = supportNote{Emulated, "Relay keeps the response itself (TTL and size bounds: docs/inference-api.md), so previous_response_id, item references and GET /v1/responses/{id} work"}
	return t
}
