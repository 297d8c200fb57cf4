package usage

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// Defaults for zero MaintainerConfig fields.
const (
	DefaultDaysAhead        = 7
	DefaultMaintainInterval = time.Hour
)

// Partitions is what the Maintainer needs of the store; *store.Store is one.
type Partitions interface {
	EnsureUsagePartitions(ctx context.Context, first, last time.Time) (int, error)
	DropUsagePartitions(ctx context.Context, cutoff time.Time) (int, error)
}

// MaintainerConfig wires a Maintainer. Store is required.
type MaintainerConfig struct {
	Store Partitions
	// Retention is how long events (and their rollups) are kept, at least:
	// whole UTC days older than it are dropped. 0 keeps everything.
	Retention time.Duration
	// DaysAhead is how many UTC days after today get their partition in
	// advance. 0: DefaultDaysAhead.
	DaysAhead int
	// Interval between two passes. 0: DefaultMaintainInterval.
	Interval time.Duration
	Logger   *slog.Logger
	Now      func() time.Time
}

// Maintainer keeps the ledger's daily partitions made ahead of time and
// drops the ones retention has passed. Every pod may run one: passes
// serialise on an advisory lock in Postgres and are idempotent.
type Maintainer struct {
	cfg MaintainerConfig
	log *slog.Logger
	now func() time.Time
}

// NewMaintainer returns a Maintainer; Run drives it.
func NewMaintainer(cfg MaintainerConfig) *Maintainer {
	m := &Maintainer{cfg: cfg, log: cfg.Logger, now: cfg.Now}
	if m.cfg.DaysAhead <= 0 {
		m.cfg.DaysAhead = DefaultDaysAhead
	}
	if m.cfg.Interval <= 0 {
		m.cfg.Interval = DefaultMaintainInterval
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.now == nil {
		m.now = time.Now
	}
	return m
}

// Run makes a pass at once and then every Interval until ctx ends. A failed
// pass is logged and tried again at the next one. It returns nil when ctx ends.
func (m *Maintainer) Run(ctx context.Context) error {
	t := time.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		if err := m.Pass(ctx); err != nil && ctx.Err() == nil {
			m.log.Error("usage maintenance failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Pass makes the partitions from yesterday to DaysAhead days after today
// and applies retention.
func (m *Maintainer) Pass(ctx context.Context) error {
	now := m.now().UTC()
	today := now.Truncate(24 * time.Hour)
	made, err := m.cfg.Store.EnsureUsagePartitions(ctx, today.AddDate(0, 0, -1), today.AddDate(0, 0, m.cfg.DaysAhead))
	if err != nil {
		return err
	}
	if made > 0 {
		m.log.Info("made usage partitions", "count", made)
	}
	if m.cfg.Retention <= 0 {
		return nil
	}
	dropped, err := m.cfg.Store.DropUsagePartitions(ctx, now.Add(-m.cfg.Retention))
	if err != nil {
		return err
	}
	if dropped > 0 {
		m.log.Info("dropped usage partitions past retention", "count", dropped, "retention", m.cfg.Retention.String())
	}
	return nil
}

// ParseRetention reads RELAY_USAGE_RETENTION: a number of days ("90d"), a
// Go duration ("2160h"), or "0", "" or "forever" to keep everything.
func ParseRetention(s string) (time.Duration, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	switch s {
	case "", "0", "forever", "off":
		return 0, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 1 || n > 36500 {
			return 0, fmt.Errorf("retention %q: want a whole number of days from 1 to 36500, as in 90d", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Hour {
		return 0, fmt.Errorf("retention %q: want days (90d) or a duration of at least 1h (2160h)", s)
	}
	return d, nil
}
