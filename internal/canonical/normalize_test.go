package canonical

import (
	"encoding/json"
	"testing"
)

func text(s string) Part { return Part{Type: PartText, Text: s} }
func call(id, name string) Part {
	return Part{Type: PartToolCall, ToolCall: &ToolCall{ID: id, Name: name}}
}
func result(id string) Part {
	return Part{Type: PartToolResult, ToolResult: &ToolResult{CallID: id, Content: []Part{text("r" + id)}}}
}

func roles(ms []Message) string {
	b, _ := json.Marshal(ms)
	return string(b)
}

func TestHoistedSystem(t *testing.T) {
	t.Parallel()
	r := Request{
		System:   []Part{text("a")},
		Messages: []Message{{Role: RoleUser, Parts: []Part{text("u")}}, {Role: RoleSystem, Parts: []Part{text("b")}}, {Role: RoleUser, Parts: []Part{text("v")}}},
	}
	before := roles(r.Messages)
	sys, msgs := r.HoistedSystem()
	if TextOf(sys, "|") != "a|b" || len(msgs) != 2 || msgs[0].Role != RoleUser || msgs[1].Role != RoleUser {
		t.Errorf("system %v messages %v", sys, msgs)
	}
	if roles(r.Messages) != before || len(r.System) != 1 {
		t.Error("HoistedSystem changed the request")
	}
	plain := Request{System: []Part{text("a")}, Messages: []Message{{Role: RoleUser}}}
	if sys, msgs := plain.HoistedSystem(); &sys[0] != &plain.System[0] || &msgs[0] != &plain.Messages[0] {
		t.Error("nothing to hoist: the request's slices come back as they are")
	}
}

func TestGroupToolResults(t *testing.T) {
	t.Parallel()
	msgs := []Message{
		{Role: RoleUser, Parts: []Part{text("q")}},
		{Role: RoleAssistant, Parts: []Part{call("a", "f"), call("b", "g")}},
		{Role: RoleTool, Parts: []Part{result("b")}},
		{Role: RoleUser, Parts: []Part{text("meanwhile")}},
		{Role: RoleTool, Parts: []Part{result("a"), result("zz")}},
	}
	before := roles(msgs)
	got := GroupToolResults(msgs)
	if roles(msgs) != before {
		t.Error("GroupToolResults changed its input")
	}
	want := []Message{
		msgs[0], msgs[1],
		{Role: RoleTool, Parts: []Part{result("b"), result("a")}},
		msgs[3],
		{Role: RoleTool, Parts: []Part{result("zz")}}, // answers no call: stays
	}
	if roles(got) != roles(want) {
		t.Errorf("got\n%s\nwant\n%s", roles(got), roles(want))
	}
	grouped := []Message{msgs[0], msgs[1], {Role: RoleTool, Parts: []Part{result("a")}}, {Role: RoleTool, Parts: []Part{result("b")}}, msgs[3]}
	if g := GroupToolResults(grouped); &g[0] != &grouped[0] {
		t.Error("an already grouped conversation was copied")
	}
	if names := ToolNames(msgs); names["a"] != "f" || names["b"] != "g" || len(names) != 2 {
		t.Errorf("names %v", names)
	}
}
