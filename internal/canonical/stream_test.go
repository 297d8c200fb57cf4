package canonical

import (
	"encoding/json"
	"testing"
)

// A response turned into events and accumulated back is the same response.
func TestEventsAccumulate_RoundTrip(t *testing.T) {
	t.Parallel()
	r := Response{
		ID: "r1", Model: "m", Created: 5,
		Parts: []Part{
			{Type: PartThinking, Text: "think", Signature: "sig", Origin: OriginAnthropic},
			{Type: PartRedactedThinking, Signature: "opaque", Origin: OriginAnthropic},
			{Type: PartText, Text: "hello"},
			{Type: PartToolCall, ToolCall: &ToolCall{ID: "c1", Name: "f", Arguments: `{"a":1}`, Signature: "gsig"}},
			{Type: PartToolCall, ToolCall: &ToolCall{ID: "c2", Name: "g"}},
		},
		Finish: FinishToolCalls, Usage: Usage{Input: 10, Output: 7, CacheRead: 3, Reasoning: 2},
	}
	evs := r.Events(nil)
	if evs[0].Kind != EventStart || evs[0].Usage.Output != 0 || evs[0].Usage.Input != 10 || evs[len(evs)-1].Kind != EventDone {
		t.Fatalf("events %+v", evs)
	}
	var a Accumulator
	for i := range evs {
		a.Add(&evs[i])
	}
	got := a.Result()
	if !a.Done || a.Err != nil {
		t.Errorf("done %v err %v", a.Done, a.Err)
	}
	want, _ := json.Marshal(&r)
	if back, _ := json.Marshal(got); string(back) != string(want) {
		t.Errorf("round trip:\n%s\n%s", back, want)
	}
}

func TestAccumulator_InterleavedParts(t *testing.T) {
	t.Parallel()
	var a Accumulator
	for _, ev := range []Event{
		{Kind: EventStart, ID: "r"},
		{Kind: EventPartStart, Index: 0, Part: PartToolCall, ID: "a", Name: "f"},
		{Kind: EventPartStart, Index: 1, Part: PartToolCall, ID: "b", Name: "g"},
		{Kind: EventDelta, Index: 0, Text: `{"x":`},
		{Kind: EventDelta, Index: 1, Text: `{}`},
		{Kind: EventDelta, Index: 0, Text: `1}`},
		{Kind: EventDelta, Index: 7, Text: "ignored"},
		{Kind: EventError, Err: &Error{Kind: ErrOverloaded, Message: "busy"}},
	} {
		a.Add(&ev)
	}
	r := a.Result()
	if r.Parts[0].ToolCall.Arguments != `{"x":1}` || r.Parts[1].ToolCall.Arguments != `{}` || a.Err == nil || a.Done {
		t.Errorf("%+v %+v", r.Parts, a.Err)
	}
	if EventDone.String() != "done" || EventKind(0).String() != "unknown" {
		t.Error("kind names")
	}
}

// Parts that start after others got deltas (the accumulator's slices grow
// under written buffers) keep their text: a fuzz-found panic.
func TestAccumulator_ManyParts(t *testing.T) {
	t.Parallel()
	var a Accumulator
	for i := range 40 {
		a.Add(&Event{Kind: EventPartStart, Index: i, Part: PartText})
		a.Add(&Event{Kind: EventDelta, Index: i, Text: "x"})
		a.Add(&Event{Kind: EventDelta, Index: 0, Text: "y"})
	}
	r := a.Result()
	if len(r.Parts) != 40 || len(r.Parts[0].Text) != 41 || r.Parts[39].Text != "x" {
		t.Errorf("%d parts, first %q", len(r.Parts), r.Parts[0].Text)
	}
}
