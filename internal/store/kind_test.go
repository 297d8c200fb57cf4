package store

import "testing"

func TestKindOwner(t *testing.T) {
	t.Parallel()
	for k, want := range map[Kind]Kind{
		KindGroupMemberships: KindGroups, KindRateLimitRules: KindRateLimits, KindPolicyModels: KindPolicies,
		KindPolicyHostKeys: KindPolicies, KindPolicyModelRateLimits: KindPolicies,
		KindModels: KindModels, KindPolicies: KindPolicies, "sessions": KindSessions, "breakers": "breakers",
	} {
		if got := k.Owner(); got != want {
			t.Errorf("%s.Owner() = %s, want %s", k, got, want)
		}
	}
}
