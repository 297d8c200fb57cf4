package usage_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/internal/usage"
)

func TestParseRetention(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{
		"": 0, "0": 0, "forever": 0, "90d": 90 * 24 * time.Hour, "1D": 24 * time.Hour, "2160h": 2160 * time.Hour, " 7d ": 7 * 24 * time.Hour,
	} {
		if got, err := usage.ParseRetention(in); err != nil || got != want {
			t.Errorf("ParseRetention(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"-1d", "0d", "90", "3m", "ninety days", "1.5d"} {
		if _, err := usage.ParseRetention(bad); err == nil {
			t.Errorf("ParseRetention(%q) accepted", bad)
		}
	}
}

func TestMaintainer_MakesPartitionsAheadAndAppliesRetention(t *testing.T) {
	t.Parallel()
	st, err := store.Open(t.Context(), pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2031, 5, 10, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	m := usage.NewMaintainer(usage.MaintainerConfig{Store: st, Retention: 3 * 24 * time.Hour, DaysAhead: 2, Now: clock})
	if err := m.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	now = now.Add(5 * 24 * time.Hour) // 2031-05-15 12:00: keep from 05-12 on
	if err := m.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	names, err := st.ListUsagePartitions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"usage_events_p20310512", "usage_events_p20310514", "usage_events_p20310515", "usage_events_p20310516", "usage_events_p20310517"}
	if !slices.Equal(names, want) {
		t.Errorf("partitions %v, want %v", names, want)
	}

	// Run makes a pass at once and returns when its context ends.
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	now = now.Add(24 * time.Hour)
	go func() {
		done <- usage.NewMaintainer(usage.MaintainerConfig{Store: st, DaysAhead: 2, Now: clock, Interval: time.Hour}).Run(ctx)
	}()
	poll.Until(t, 30*time.Second, "the maintainer makes the partition", func() bool {
		names, _ := st.ListUsagePartitions(t.Context())
		return slices.Contains(names, "usage_events_p20310518")
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
