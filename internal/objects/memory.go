package objects

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/relay-llm/relay/internal/snapshot"
)

// Memory is the Index of one pod: correct without Redis, lost on restart.
type Memory struct {
	opts Options

	mu      sync.Mutex
	lists   map[listKey]*memList
	pending map[Pending]time.Time
}

var _ Index = (*Memory)(nil)

type listKey struct {
	project snapshot.ID
	kind    Kind
}

// memList is one project's objects of one kind, oldest first.
type memList struct {
	byID  map[string]*memEntry
	order []*memEntry
}

type memEntry struct {
	o      Object
	claims map[string]struct{}
}

// NewMemory returns an empty in-process index.
func NewMemory(opts Options) *Memory {
	return &Memory{opts: opts.withDefaults(), lists: make(map[listKey]*memList), pending: make(map[Pending]time.Time)}
}

func older(a, b *memEntry) int {
	if c := a.o.CreatedAt.Compare(b.o.CreatedAt); c != 0 {
		return c
	}
	return cmp.Compare(a.o.ID, b.o.ID)
}

// prune forgets l's expired entries and those past the count; mu held.
func (m *Memory) prune(k listKey, l *memList) {
	cut := m.opts.Now().Add(-m.opts.Retention)
	n := 0
	for n < len(l.order) && l.order[n].o.CreatedAt.Before(cut) {
		n++
	}
	if over := len(l.order) - n - m.opts.MaxPerKind; over > 0 {
		n += over
	}
	for _, e := range l.order[:n] {
		delete(l.byID, e.o.ID)
	}
	l.order = slices.Delete(l.order, 0, n)
	if len(l.order) == 0 {
		delete(m.lists, k)
	}
}

// Put implements Index.
func (m *Memory) Put(_ context.Context, o Object) error {
	if err := check(&o); err != nil {
		return err
	}
	o = clone(o)
	k := listKey{o.ProjectID, o.Kind}
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.lists[k]
	if l == nil {
		l = &memList{byID: make(map[string]*memEntry)}
		m.lists[k] = l
	}
	e := l.byID[o.ID]
	if e != nil {
		i, _ := slices.BinarySearchFunc(l.order, e, older)
		l.order = slices.Delete(l.order, i, i+1)
		e.o = o
	} else {
		e = &memEntry{o: o}
		l.byID[o.ID] = e
	}
	i, _ := slices.BinarySearchFunc(l.order, e, older)
	l.order = slices.Insert(l.order, i, e)
	m.prune(k, l)
	return nil
}

// clone is o with its own Attrs and State, so that no caller shares the
// index's.
func clone(o Object) Object {
	o.Attrs = maps.Clone(o.Attrs)
	if o.State != nil {
		st := *o.State
		o.State = &st
	}
	return o
}

// find returns the live entry; mu held.
func (m *Memory) find(project snapshot.ID, kind Kind, id string) *memEntry {
	k := listKey{project, kind}
	l := m.lists[k]
	if l == nil {
		return nil
	}
	m.prune(k, l)
	return l.byID[id]
}

// Get implements Index.
func (m *Memory) Get(_ context.Context, project snapshot.ID, kind Kind, id string) (Object, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.find(project, kind, id)
	if e == nil {
		return Object{}, ErrNotFound
	}
	return clone(e.o), nil
}

// List implements Index.
func (m *Memory) List(_ context.Context, project snapshot.ID, kind Kind, p Page) ([]Object, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := listKey{project, kind}
	l := m.lists[k]
	if l == nil {
		return nil, false, nil
	}
	m.prune(k, l)
	i, step := len(l.order)-1, -1 // newest first
	if p.Asc {
		i, step = 0, 1
	}
	if p.After != "" {
		e := l.byID[p.After]
		if e == nil {
			return nil, false, nil
		}
		j, _ := slices.BinarySearchFunc(l.order, e, older)
		i = j + step
	}
	limit := p.limit()
	var out []Object
	for ; i >= 0 && i < len(l.order) && len(out) < limit; i += step {
		out = append(out, clone(l.order[i].o))
	}
	return out, i >= 0 && i < len(l.order), nil
}

// Delete implements Index.
func (m *Memory) Delete(_ context.Context, project snapshot.ID, kind Kind, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.find(project, kind, id)
	if e == nil {
		return ErrNotFound
	}
	k := listKey{project, kind}
	l := m.lists[k]
	i, _ := slices.BinarySearchFunc(l.order, e, older)
	l.order = slices.Delete(l.order, i, i+1)
	delete(l.byID, id)
	if len(l.order) == 0 {
		delete(m.lists, k)
	}
	delete(m.pending, Pending{project, kind, id})
	return nil
}

// Claim implements Index.
func (m *Memory) Claim(_ context.Context, project snapshot.ID, kind Kind, id, mark string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.find(project, kind, id)
	if e == nil {
		return false, ErrNotFound
	}
	if _, ok := e.claims[mark]; ok {
		return false, nil
	}
	if e.claims == nil {
		e.claims = make(map[string]struct{})
	}
	e.claims[mark] = struct{}{}
	return true, nil
}

// Watch implements Index.
func (m *Memory) Watch(_ context.Context, p Pending, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending[p] = at
	return nil
}

// Due implements Index.
func (m *Memory) Due(_ context.Context, now time.Time, lease time.Duration, limit int) ([]Pending, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var due []Pending
	for p, at := range m.pending {
		if !at.After(now) {
			due = append(due, p)
		}
	}
	slices.SortFunc(due, func(a, b Pending) int {
		if c := m.pending[a].Compare(m.pending[b]); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	if len(due) > limit {
		due = due[:max(limit, 0)]
	}
	for _, p := range due {
		m.pending[p] = now.Add(lease)
	}
	return due, nil
}

// Unwatch implements Index.
func (m *Memory) Unwatch(_ context.Context, p Pending) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pending, p)
	return nil
}
