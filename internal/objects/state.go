package objects

import (
	"encoding/json"
	"time"
)

// State is what Relay last saw of an object upstream, kept on its entry so
// that the control plane can show a project's objects without asking the
// upstream: a batch's status and request counts (a message batch's
// processing_status, its succeeded counted as completed and its errored,
// canceled and expired as failed). Files keep their purpose in Attrs and
// their bytes in Size, as the upload made them.
type State struct {
	Status    string    `json:"status,omitempty"`
	Total     int64     `json:"total,omitempty"`
	Completed int64     `json:"completed,omitempty"`
	Failed    int64     `json:"failed,omitempty"`
	SeenAt    time.Time `json:"seen_at"`
}

// Attrs a control-plane reader names (the proxy writes them).
const (
	AttrPurpose = "purpose"  // a file's purpose
	AttrModel   = "model_id" // a batch's catalog model
)

// Seen reads the state of an object of kind k from the upstream's JSON of
// it, seen at. It reports nil for a kind without one or a body it cannot
// read, so a caller keeps what the entry had.
func Seen(k Kind, body []byte, at time.Time) *State {
	switch k {
	case KindBatch:
		var b struct {
			Status string `json:"status"`
			Counts *struct {
				Total     int64 `json:"total"`
				Completed int64 `json:"completed"`
				Failed    int64 `json:"failed"`
			} `json:"request_counts"`
		}
		if json.Unmarshal(body, &b) != nil || b.Status == "" {
			return nil
		}
		s := &State{Status: b.Status, SeenAt: at.UTC()}
		if c := b.Counts; c != nil {
			s.Total, s.Completed, s.Failed = c.Total, c.Completed, c.Failed
		}
		return s
	case KindMessageBatch:
		var b struct {
			Status string `json:"processing_status"`
			Counts *struct {
				Processing int64 `json:"processing"`
				Succeeded  int64 `json:"succeeded"`
				Errored    int64 `json:"errored"`
				Canceled   int64 `json:"canceled"`
				Expired    int64 `json:"expired"`
			} `json:"request_counts"`
		}
		if json.Unmarshal(body, &b) != nil || b.Status == "" {
			return nil
		}
		s := &State{Status: b.Status, SeenAt: at.UTC()}
		if c := b.Counts; c != nil {
			s.Completed, s.Failed = c.Succeeded, c.Errored+c.Canceled+c.Expired
			s.Total = c.Processing + s.Completed + s.Failed
		}
		return s
	}
	return nil
}

// Same reports whether a and b say the same of an object (SeenAt aside):
// an entry is written again only when what Relay saw changed.
func (s *State) Same(o *State) bool {
	if s == nil || o == nil {
		return s == o
	}
	a, b := *s, *o
	a.SeenAt, b.SeenAt = time.Time{}, time.Time{}
	return a == b
}
