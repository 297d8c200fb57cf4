package respstore

import (
	"context"
	"encoding/json"
	"time"
)

// Conversations in process memory, beside Memory's responses and under its
// lock, with the same bounds and eviction order as Redis's.

type memConvs struct {
	convs map[string]*memConv // by conversation id
	bytes int64
}

type memConv struct {
	meta  []byte                     // encodeConversation
	items []json.RawMessage          // in order
	byID  map[string]json.RawMessage // item id → item
	size  int64                      // bytes of the items
	at    time.Time                  // last change
}

func (m *Memory) convProject(project string, create bool) *memConvs {
	if m.convs == nil {
		m.convs = map[string]*memConvs{}
	}
	p := m.convs[project]
	if p == nil && create {
		p = &memConvs{convs: map[string]*memConv{}}
		m.convs[project] = p
	}
	return p
}

// conv is the live conversation id of project, nil when there is none.
func (m *Memory) conv(project, id string) (*memConvs, *memConv) {
	p := m.convProject(project, false)
	if p == nil {
		return nil, nil
	}
	c := p.convs[id]
	if c != nil && !c.at.After(m.now().Add(-m.limits.TTL)) {
		p.drop(id)
		c = nil
	}
	return p, c
}

func (p *memConvs) drop(id string) {
	if c := p.convs[id]; c != nil {
		p.bytes -= c.size
		delete(p.convs, id)
	}
}

// touched marks c changed now and evicts the project's least recently
// changed conversations (never c) while the project is over its bound.
func (m *Memory) touched(p *memConvs, id string, c *memConv) {
	c.at = m.now()
	cut := c.at.Add(-m.limits.TTL)
	for oid, o := range p.convs {
		if !o.at.After(cut) {
			p.drop(oid)
		}
	}
	for p.bytes > m.limits.ProjectMaxBytes {
		oldest := ""
		for oid, o := range p.convs {
			if oid != id && (oldest == "" || o.at.Before(p.convs[oldest].at)) {
				oldest = oid
			}
		}
		if oldest == "" {
			return
		}
		p.drop(oldest)
	}
}

func (c *memConv) add(items []json.RawMessage) int64 {
	var n int64
	for _, it := range items {
		id := ItemID(it)
		if _, dup := c.byID[id]; dup {
			continue
		}
		c.byID[id] = it
		c.items = append(c.items, it)
		n += int64(len(it))
	}
	c.size += n
	return n
}

// addedSize is what adding items to c would add.
func (c *memConv) addedSize(items []json.RawMessage) int64 {
	var n int64
	for _, it := range items {
		if _, dup := c.byID[ItemID(it)]; !dup {
			n += int64(len(it))
		}
	}
	return n
}

// CreateConversation implements ConversationStore.
func (m *Memory) CreateConversation(_ context.Context, project string, conv *Conversation, items []json.RawMessage) error {
	items, _, size, ok := uniqueItems(items)
	if !ok {
		return errNoItemID
	}
	if size > m.limits.MaxBytes {
		return ErrTooLarge
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.convProject(project, true)
	p.drop(conv.ID)
	c := &memConv{meta: encodeConversation(conv), byID: make(map[string]json.RawMessage, len(items))}
	p.bytes += c.add(items)
	p.convs[conv.ID] = c
	m.touched(p, conv.ID, c)
	return nil
}

// GetConversation implements ConversationStore.
func (m *Memory) GetConversation(_ context.Context, project, id string, items bool) (*ConversationState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, c := m.conv(project, id)
	if c == nil {
		return nil, ErrNotFound
	}
	conv, err := DecodeConversation(c.meta)
	if err != nil {
		return nil, err
	}
	st := &ConversationState{Conversation: *conv}
	if items {
		st.Items = append([]json.RawMessage(nil), c.items...)
	}
	return st, nil
}

// AppendItems implements ConversationStore.
func (m *Memory) AppendItems(_ context.Context, project, id string, items []json.RawMessage) error {
	items, _, _, ok := uniqueItems(items)
	if !ok {
		return errNoItemID
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p, c := m.conv(project, id)
	if c == nil {
		return ErrNotFound
	}
	if c.size+c.addedSize(items) > m.limits.MaxBytes {
		return ErrTooLarge
	}
	p.bytes += c.add(items)
	m.touched(p, id, c)
	return nil
}

// UpdateConversation implements ConversationStore.
func (m *Memory) UpdateConversation(_ context.Context, project, id string, metadata map[string]string) (*Conversation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, c := m.conv(project, id)
	if c == nil {
		return nil, ErrNotFound
	}
	conv, err := DecodeConversation(c.meta)
	if err != nil {
		return nil, err
	}
	conv.Metadata = metadata
	c.meta = encodeConversation(conv)
	m.touched(p, id, c)
	return DecodeConversation(c.meta)
}

// DeleteConversation implements ConversationStore.
func (m *Memory) DeleteConversation(_ context.Context, project, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, c := m.conv(project, id)
	if c == nil {
		return ErrNotFound
	}
	p.drop(id)
	return nil
}

// DeleteItem implements ConversationStore.
func (m *Memory) DeleteItem(_ context.Context, project, id, itemID string) (*Conversation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, c := m.conv(project, id)
	if c == nil {
		return nil, ErrNotFound
	}
	conv, err := DecodeConversation(c.meta)
	if err != nil {
		return nil, err
	}
	it, ok := c.byID[itemID]
	if !ok {
		return nil, ErrItemNotFound
	}
	delete(c.byID, itemID)
	for i := range c.items {
		if ItemID(c.items[i]) == itemID {
			c.items = append(c.items[:i:i], c.items[i+1:]...)
			break
		}
	}
	c.size -= int64(len(it))
	p.bytes -= int64(len(it))
	m.touched(p, id, c)
	return conv, nil
}
