package canonical

import "testing"

func TestErrorKinds_StatusRoundTrip(t *testing.T) {
	t.Parallel()
	for _, k := range []ErrorKind{ErrInvalidRequest, ErrAuthentication, ErrPermission, ErrNotFound, ErrTooLarge, ErrRateLimit, ErrOverloaded, ErrTimeout, ErrServer} {
		if got := KindForStatus(StatusForKind(k)); got != k {
			t.Errorf("%s → %d → %s", k, StatusForKind(k), got)
		}
	}
	for status, want := range map[int]ErrorKind{400: ErrInvalidRequest, 422: ErrInvalidRequest, 402: ErrPermission, 408: ErrTimeout, 529: ErrOverloaded, 502: ErrServer} {
		if got := KindForStatus(status); got != want {
			t.Errorf("KindForStatus(%d) = %s, want %s", status, got, want)
		}
	}
}

func TestUsage_Total(t *testing.T) {
	t.Parallel()
	if (Usage{Input: 10, Output: 5, CacheRead: 4, Reasoning: 2}).Total() != 15 {
		t.Error("total counts cached and reasoning tokens twice")
	}
}
