package respstore

import (
	"context"
	"sync"
	"time"
)

// Memory is a Store in process memory: correct for one pod. It has the
// same bounds and eviction order as Redis.
type Memory struct {
	limits Limits
	now    func() time.Time

	mu       sync.Mutex
	projects map[string]*memProject
	convs    map[string]*memConvs // conversations by project (conversation_memory.go)
}

type memProject struct {
	recs  map[string]*memEntry // by response id
	items map[string]string    // item id → the newest response holding it
	order []string             // response ids, oldest first; deleted ones are skipped
	bytes int64
}

type memEntry struct {
	data []byte
	at   time.Time
	ids  []string
}

// NewMemory returns a Memory with limits; now nil is time.Now.
func NewMemory(limits Limits, now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{limits: limits.withDefaults(), now: now, projects: map[string]*memProject{}}
}

// Limits implements Store.
func (m *Memory) Limits() Limits { return m.limits }

// Load implements Store.
func (m *Memory) Load(_ context.Context, project, id string, itemIDs []string) (Loaded, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out Loaded
	p := m.projects[project]
	if p == nil {
		return out, nil
	}
	m.expire(p)
	if e := p.recs[id]; id != "" && e != nil {
		rec, err := Decode(e.data)
		if err != nil {
			return out, err
		}
		out.Response = rec
	}
	if len(itemIDs) == 0 {
		return out, nil
	}
	var holders []*Record
	seen := map[string]bool{}
	for _, item := range itemIDs {
		rid := p.items[item]
		if rid == "" || seen[rid] {
			continue
		}
		seen[rid] = true
		if e := p.recs[rid]; e != nil {
			rec, err := Decode(e.data)
			if err != nil {
				return out, err
			}
			holders = append(holders, rec)
		}
	}
	out.Items = findItems(itemIDs, holders)
	return out, nil
}

// Put implements Store.
func (m *Memory) Put(_ context.Context, project string, rec *Record) error {
	data, ids, perr := prepare(rec, m.limits.MaxBytes)
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.projects[project]
	if p == nil {
		p = &memProject{recs: map[string]*memEntry{}, items: map[string]string{}}
		m.projects[project] = p
	}
	m.expire(p)
	if p.recs[rec.ID] != nil {
		p.drop(rec.ID)
	}
	p.recs[rec.ID] = &memEntry{data: data, at: m.now(), ids: ids}
	p.order = append(p.order, rec.ID)
	for _, id := range ids {
		p.items[id] = rec.ID
	}
	p.bytes += int64(len(data))
	for p.bytes > m.limits.ProjectMaxBytes && len(p.order) > 0 && p.order[0] != rec.ID {
		oldest := p.order[0]
		p.order = p.order[1:]
		p.drop(oldest)
	}
	return perr
}

// Delete implements Store.
func (m *Memory) Delete(_ context.Context, project, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.projects[project]
	if p == nil {
		return ErrNotFound
	}
	m.expire(p)
	if p.recs[id] == nil {
		return ErrNotFound
	}
	p.drop(id)
	return nil
}

// expire drops p's responses older than the TTL.
func (m *Memory) expire(p *memProject) {
	cut := m.now().Add(-m.limits.TTL)
	for len(p.order) > 0 {
		e := p.recs[p.order[0]]
		if e != nil && e.at.After(cut) {
			return
		}
		if e != nil {
			p.drop(p.order[0])
		}
		p.order = p.order[1:]
	}
}

// drop removes response id (its place in order is skipped later).
func (p *memProject) drop(id string) {
	e := p.recs[id]
	if e == nil {
		return
	}
	delete(p.recs, id)
	p.bytes -= int64(len(e.data))
	for _, item := range e.ids {
		if p.items[item] == id {
			delete(p.items, item)
		}
	}
}
