package canonical

// Helpers that reshape a conversation for providers with strict turn rules
// (Anthropic, Gemini). They never modify the Request they read: encoders
// for different bindings share one decoded Request.

// HoistedSystem returns the system prompt with every later RoleSystem
// message appended to it, in order, and the messages without them. The
// position of a mid-conversation system message is lost; its text is not.
func (r *Request) HoistedSystem() (system []Part, msgs []Message) {
	n := 0
	for i := range r.Messages {
		if r.Messages[i].Role == RoleSystem {
			n++
		}
	}
	if n == 0 {
		return r.System, r.Messages
	}
	system = make([]Part, 0, len(r.System)+n)
	system = append(system, r.System...)
	msgs = make([]Message, 0, len(r.Messages)-n)
	for i := range r.Messages {
		m := &r.Messages[i]
		if m.Role != RoleSystem {
			msgs = append(msgs, *m)
			continue
		}
		for _, p := range m.Parts {
			if p.Type == PartText {
				system = append(system, p)
			}
		}
	}
	return system, msgs
}

// GroupToolResults returns msgs with each tool result moved into one
// RoleTool message placed right after the assistant message that made the
// call, results in the order they came. Results that answer no earlier call
// stay where they were; RoleTool messages left empty are dropped. msgs is
// returned as is when it is already grouped.
func GroupToolResults(msgs []Message) []Message {
	if groupedAlready(msgs) {
		return msgs
	}
	owner := map[string]int{} // call id → index of the assistant message
	for i := range msgs {
		if msgs[i].Role != RoleAssistant {
			continue
		}
		for _, p := range msgs[i].Parts {
			if p.Type == PartToolCall && p.ToolCall != nil {
				owner[p.ToolCall.ID] = i
			}
		}
	}
	moved := map[int][]Part{} // assistant index → results
	for i := range msgs {
		if msgs[i].Role != RoleTool {
			continue
		}
		for _, p := range msgs[i].Parts {
			if p.Type != PartToolResult || p.ToolResult == nil {
				continue
			}
			if a, ok := owner[p.ToolResult.CallID]; ok && a < i {
				moved[a] = append(moved[a], p)
			}
		}
	}
	out := make([]Message, 0, len(msgs))
	for i := range msgs {
		m := msgs[i]
		if m.Role == RoleTool {
			kept := make([]Part, 0, len(m.Parts))
			for _, p := range m.Parts {
				if p.Type == PartToolResult && p.ToolResult != nil {
					if a, ok := owner[p.ToolResult.CallID]; ok && a < i {
						continue
					}
				}
				kept = append(kept, p)
			}
			if len(kept) == 0 {
				continue
			}
			m.Parts = kept
		}
		out = append(out, m)
		if rs := moved[i]; m.Role == RoleAssistant && len(rs) > 0 {
			out = append(out, Message{Role: RoleTool, Parts: rs})
		}
	}
	return out
}

// groupedAlready reports whether every tool result sits in the messages
// right after the assistant message that called it, with only tool
// messages between them.
func groupedAlready(msgs []Message) bool {
	var open map[string]bool
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case RoleAssistant:
			open = nil
			for _, p := range m.Parts {
				if p.Type == PartToolCall && p.ToolCall != nil {
					if open == nil {
						open = map[string]bool{}
					}
					open[p.ToolCall.ID] = true
				}
			}
		case RoleTool:
			for _, p := range m.Parts {
				if p.Type == PartToolResult && p.ToolResult != nil && !open[p.ToolResult.CallID] {
					return false
				}
			}
		default:
			open = nil
		}
	}
	return true
}

// ToolNames maps each tool call id in msgs to the called function's name,
// for providers that name a result's function (Gemini).
func ToolNames(msgs []Message) map[string]string {
	names := map[string]string{}
	for i := range msgs {
		for _, p := range msgs[i].Parts {
			if p.Type == PartToolCall && p.ToolCall != nil {
				names[p.ToolCall.ID] = p.ToolCall.Name
			}
		}
	}
	return names
}
