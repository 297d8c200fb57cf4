package server

import "testing"

// TestFitFileLimit_DefaultCapFollowsTheLimit: under default settings a low
// open-file limit sizes the inference cap (no warning is due); a cap the
// operator set is kept, and a limit that fits changes nothing.
func TestFitFileLimit_DefaultCapFollowsTheLimit(t *testing.T) {
	def := Limits{}.withDefaults()
	if got, fitted := fitFileLimit(def, 4096); !fitted || filesNeeded(got) > 4096 || got.MaxConnections < 1000 {
		t.Errorf("default caps under 4096 files: %d connections (fitted %v), needing %d files", got.MaxConnections, fitted, filesNeeded(got))
	}
	if got, fitted := fitFileLimit(def, 1<<20); fitted || got.MaxConnections != DefaultMaxConnections {
		t.Errorf("default caps under a high limit changed: %d (fitted %v)", got.MaxConnections, fitted)
	}
	set := def
	set.MaxConnections = 20000
	if got, fitted := fitFileLimit(set, 4096); fitted || got.MaxConnections != 20000 {
		t.Errorf("an operator's cap was changed: %d (fitted %v)", got.MaxConnections, fitted)
	}
}
