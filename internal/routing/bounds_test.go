package routing

import (
	"errors"
	"testing"

	"github.com/relay-llm/relay/internal/wire"
)

// A caller the policy does not grant a model learns nothing of the
// catalog's hosts by pinning one: whether the host exists or not, the
// answer is the same refusal.
func TestRoute_PinnedHostOfAnUngrantedModelTellsNothing(t *testing.T) {
	t.Parallel()
	snap, c := setup()
	var r Router
	var p Plan
	for _, model := range []string{"ungranted", "ungranted@openai-a", "ungranted@nowhere"} {
		err := r.Route(snap, c.policy, model, wire.InboundChat, now, &p)
		var e *wire.Error
		if !errors.As(err, &e) || !errors.Is(err, wire.ErrForbidden) || e.Msg != `The model "ungranted" is not granted to this relay key.` {
			t.Errorf("%s: %v, want the same refusal as without a pin", model, err)
		}
	}
}
