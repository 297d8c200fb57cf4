package configfile

import "testing"

// TestRefs_NameEachReferenceOnce: a spec lists each object it names once
// per field, so a plan's checks and its "also deletes" counts see one
// reference, not two.
func TestRefs_NameEachReferenceOnce(t *testing.T) {
	t.Parallel()
	specs := []spec{
		&PolicySpec{Slug: "p", Team: "t", SharedWith: []string{"a", "b"}, RateLimit: "rl", Models: []string{"m"}, HostKeys: []string{"h/k"}},
		&HostKeySpec{Host: "h", Slug: "k", SharedWith: []string{"a", "b"}, TierRateLimit: "rl"},
	}
	for _, s := range specs {
		seen := map[ref]bool{}
		for _, r := range s.refs() {
			if seen[r] {
				t.Errorf("%T %s names %s %q in %s twice", s, s.key(), r.kind, r.key, r.field)
			}
			seen[r] = true
		}
	}
}
