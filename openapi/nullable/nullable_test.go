package nullable_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/openapi/nullable"
)

type patch struct {
	PolicyID nullable.UUID  `json:"policy_id,omitempty"`
	Priority nullable.Int32 `json:"priority,omitempty"`
}

func TestNullable_ThreeStates(t *testing.T) {
	t.Parallel()
	id := uuid.MustParse("0b7c4f7e-7d43-4c38-9a55-2b1f6f0f7a11")
	tests := []struct {
		name      string
		in        string
		specified bool
		null      bool
		want      *uuid.UUID
	}{
		{name: "absent", in: `{}`},
		{name: "null", in: `{"policy_id":null}`, specified: true, null: true},
		{name: "value", in: `{"policy_id":"` + id.String() + `"}`, specified: true, want: &id},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var p patch
			if err := json.Unmarshal([]byte(tt.in), &p); err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			if got := p.PolicyID.IsSpecified(); got != tt.specified {
				t.Errorf("IsSpecified = %v, want %v", got, tt.specified)
			}
			if got := p.PolicyID.IsNull(); got != tt.null {
				t.Errorf("IsNull = %v, want %v", got, tt.null)
			}
			got := p.PolicyID.Pointer()
			if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
				t.Errorf("Pointer = %v, want %v", got, tt.want)
			}
			out, err := json.Marshal(p)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			if string(out) != tt.in {
				t.Errorf("round trip = %s, want %s", out, tt.in)
			}
		})
	}
}

func TestNullable_RejectsWrongType(t *testing.T) {
	t.Parallel()
	var p patch
	if err := json.Unmarshal([]byte(`{"priority":"high"}`), &p); err == nil {
		t.Fatal("unmarshal of a string into Int32 succeeded")
	}
}
