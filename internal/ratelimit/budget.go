package ratelimit

import (
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/snapshot"
)

// budgetIndex finds a caller's budgets without walking them all; one is
// built per snapshot and kept while the snapshot is the newest seen.
type budgetIndex struct {
	snap                *snapshot.Snapshot
	team, project, keys map[snapshot.ID][]*snapshot.Budget
}

func (l *Limiter) budgetsFor(snap *snapshot.Snapshot) *budgetIndex {
	if snap == nil {
		return nil
	}
	cur := l.budgets.Load()
	if cur != nil && cur.snap == snap {
		return cur
	}
	idx := &budgetIndex{snap: snap, team: map[snapshot.ID][]*snapshot.Budget{},
		project: map[snapshot.ID][]*snapshot.Budget{}, keys: map[snapshot.ID][]*snapshot.Budget{}}
	for _, b := range snap.Budgets() {
		switch {
		case b.RelayKeyID != uuid.Nil:
			idx.keys[b.RelayKeyID] = append(idx.keys[b.RelayKeyID], b)
		case b.ProjectID != uuid.Nil:
			idx.project[b.ProjectID] = append(idx.project[b.ProjectID], b)
		case b.TeamID != uuid.Nil:
			idx.team[b.TeamID] = append(idx.team[b.TeamID], b)
		}
	}
	// An older snapshot (a request that started before a swap) gets its
	// own index but does not replace the newer one.
	if cur == nil || snap.Version() >= cur.snap.Version() {
		l.budgets.Store(idx)
	}
	return idx
}

// of lists the budgets that cap a caller.
func (idx *budgetIndex) of(team, project, relayKey snapshot.ID) []*snapshot.Budget {
	var out []*snapshot.Budget
	if team != uuid.Nil {
		out = append(out, idx.team[team]...)
	}
	if project != uuid.Nil {
		out = append(out, idx.project[project]...)
	}
	if relayKey != uuid.Nil {
		out = append(out, idx.keys[relayKey]...)
	}
	return out
}

// budgetCounter is a budget's counter for the period (UTC day or month)
// that holds now.
func budgetCounter(b *snapshot.Budget, now time.Time) Counter {
	tag, end := budgetPeriod(b, now)
	k := keyID{kind: keyBudget, owner: b.ID, windowSec: int64(tag)}.build()
	return Counter{Kind: KindPeriod, Tag: k.tag, Key: k.key, Limit: b.Amount, End: end}
}

// budgetCounter is the package function with the key from the limiter's
// cache for snap.
func (l *Limiter) budgetCounter(snap *snapshot.Snapshot, b *snapshot.Budget, now time.Time) Counter {
	tag, end := budgetPeriod(b, now)
	k := l.counterKey(snap, keyID{kind: keyBudget, owner: b.ID, windowSec: int64(tag)})
	return Counter{Kind: KindPeriod, Tag: k.tag, Key: k.key, Limit: b.Amount, End: end}
}

// budgetPeriod is the period of b that holds now: YYYYMM or YYYYMMDD
// (without time.Format's cost on every request), and its end.
func budgetPeriod(b *snapshot.Budget, now time.Time) (tag int, end time.Time) {
	now = now.UTC()
	y, m, d := now.Date()
	if b.Period == "month" {
		return y*100 + int(m), time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
	}
	return (y*100+int(m))*100 + d, time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}
