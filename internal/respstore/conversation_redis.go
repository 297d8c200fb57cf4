package respstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Conversations in Redis. A project's conversation keys share the hash tag
// of its responses, so each operation is one script call on one slot:
//
//	<prefix>conv:{<project>}:c:<id>  the conversation object (string)
//	<prefix>conv:{<project>}:o:<id>  its item ids in order (list)
//	<prefix>conv:{<project>}:i:<id>  item id → item (hash)
//	<prefix>conv:{<project>}:index   conversation ids by last change (sorted set)
//	<prefix>conv:{<project>}:sizes   conversation id → bytes of its items (hash)
//	<prefix>conv:{<project>}:bytes   bytes the project's conversations hold (counter)
//
// Every change prunes the conversations unchanged for a TTL, sets the
// changed one's keys to expire a TTL later and evicts the least recently
// changed while the project is over its bound.

func (s *Redis) convBase(project string) string { return s.prefix + "conv:{" + project + "}:" }

func (s *Redis) convKeys(project string) []string {
	b := s.convBase(project)
	return []string{b + "index", b + "sizes", b + "bytes"}
}

// convLua is what the change scripts share. ARGV[1] is the key base,
// ARGV[2] the conversation id, ARGV[3] now (ms), ARGV[4] the TTL (ms),
// ARGV[5] the project bound.
const convLua = `
local B, id = ARGV[1], ARGV[2]
local function dropc(c)
  local size = redis.call('HGET', KEYS[2], c)
  if size then redis.call('DECRBY', KEYS[3], size) end
  redis.call('HDEL', KEYS[2], c)
  redis.call('ZREM', KEYS[1], c)
  return redis.call('DEL', B .. 'c:' .. c, B .. 'o:' .. c, B .. 'i:' .. c)
end
local function touch()
  local now, ttl = tonumber(ARGV[3]), tonumber(ARGV[4])
  for _, old in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - ttl)) do
    if old ~= id then dropc(old) end
  end
  redis.call('ZADD', KEYS[1], now, id)
  for _, k in ipairs({B .. 'c:' .. id, B .. 'o:' .. id, B .. 'i:' .. id}) do redis.call('PEXPIRE', k, ttl) end
  local total = tonumber(redis.call('GET', KEYS[3]) or '0')
  while total > tonumber(ARGV[5]) do
    local oldest = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
    if not oldest or oldest == id then break end
    dropc(oldest)
    total = tonumber(redis.call('GET', KEYS[3]) or '0')
  end
  for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ttl) end
end
-- add appends the items (ARGV[from…], id and item pairs) not held yet; it
-- returns the bytes added.
local function add(from)
  local n = 0
  for i = from, #ARGV, 2 do
    if redis.call('HSETNX', B .. 'i:' .. id, ARGV[i], ARGV[i + 1]) == 1 then
      redis.call('RPUSH', B .. 'o:' .. id, ARGV[i])
      n = n + string.len(ARGV[i + 1])
    end
  end
  redis.call('HINCRBY', KEYS[2], id, n)
  redis.call('INCRBY', KEYS[3], n)
  return n
end
`

// convCreateScript: ARGV[6] the conversation object, ARGV[7…] items.
var convCreateScript = redis.NewScript(convLua + `
dropc(id)
redis.call('SET', B .. 'c:' .. id, ARGV[6])
add(7)
touch()
return 1
`)

// convAppendScript: ARGV[6] the bound per conversation, ARGV[7…] items.
// It returns -1 when there is no conversation, -2 when the items would
// take it over the bound.
var convAppendScript = redis.NewScript(convLua + `
if redis.call('EXISTS', B .. 'c:' .. id) == 0 then return -1 end
local size = tonumber(redis.call('HGET', KEYS[2], id) or '0')
for i = 7, #ARGV, 2 do
  if redis.call('HEXISTS', B .. 'i:' .. id, ARGV[i]) == 0 then size = size + string.len(ARGV[i + 1]) end
end
if size > tonumber(ARGV[6]) then return -2 end
add(7)
touch()
return 1
`)

// convSetScript: ARGV[6] the new conversation object; 0 when there is
// none.
var convSetScript = redis.NewScript(convLua + `
if redis.call('EXISTS', B .. 'c:' .. id) == 0 then return 0 end
redis.call('SET', B .. 'c:' .. id, ARGV[6])
touch()
return 1
`)

// convDeleteScript removes a conversation: 0 when there is none.
var convDeleteScript = redis.NewScript(convLua + `
local found = redis.call('EXISTS', B .. 'c:' .. id)
dropc(id)
return found
`)

// convDeleteItemScript: ARGV[6] the item id. It returns {} when there
// is no conversation, {object} when it has no such item, {object, 1}
// when the item was removed.
var convDeleteItemScript = redis.NewScript(convLua + `
local obj = redis.call('GET', B .. 'c:' .. id)
if not obj then return {} end
local it = redis.call('HGET', B .. 'i:' .. id, ARGV[6])
if not it then return {obj} end
redis.call('HDEL', B .. 'i:' .. id, ARGV[6])
redis.call('LREM', B .. 'o:' .. id, 1, ARGV[6])
redis.call('HINCRBY', KEYS[2], id, -string.len(it))
redis.call('DECRBY', KEYS[3], string.len(it))
touch()
return {obj, 1}
`)

// convLoadScript: ARGV[1] the key base, ARGV[2] the id. It returns {}
// when there is no conversation, else its object and its items in order.
var convLoadScript = redis.NewScript(`
local B, id = ARGV[1], ARGV[2]
local obj = redis.call('GET', B .. 'c:' .. id)
if not obj then return {} end
local out = {obj}
local ids = redis.call('LRANGE', B .. 'o:' .. id, 0, -1)
for i = 1, #ids, 500 do
  local its = redis.call('HMGET', B .. 'i:' .. id, unpack(ids, i, math.min(i + 499, #ids)))
  for j = 1, #its do
    if its[j] then out[#out + 1] = its[j] end
  end
end
return out
`)

func (s *Redis) convArgs(project, id string, extra int) []any {
	args := make([]any, 0, 5+extra)
	return append(args, s.convBase(project), id, s.now().UnixMilli(), s.limits.TTL.Milliseconds(), s.limits.ProjectMaxBytes)
}

func appendItemArgs(args []any, items []json.RawMessage, ids []string) []any {
	for i, it := range items {
		args = append(args, ids[i], []byte(it))
	}
	return args
}

// CreateConversation implements ConversationStore.
func (s *Redis) CreateConversation(ctx context.Context, project string, c *Conversation, items []json.RawMessage) error {
	items, ids, size, ok := uniqueItems(items)
	if !ok {
		return errNoItemID
	}
	if size > s.limits.MaxBytes {
		return ErrTooLarge
	}
	args := append(s.convArgs(project, c.ID, 1+2*len(items)), encodeConversation(c))
	args = appendItemArgs(args, items, ids)
	if err := convCreateScript.Run(ctx, s.client, s.convKeys(project), args...).Err(); err != nil {
		return fmt.Errorf("store conversation: %w", err)
	}
	return nil
}

// GetConversation implements ConversationStore.
func (s *Redis) GetConversation(ctx context.Context, project, id string, items bool) (*ConversationState, error) {
	if !items {
		data, err := s.client.Get(ctx, s.convBase(project)+"c:"+id).Bytes()
		if errors.Is(err, redis.Nil) {
			return nil, ErrNotFound
		}
		if err != nil {
			return nil, fmt.Errorf("load conversation: %w", err)
		}
		c, err := DecodeConversation(data)
		if err != nil {
			return nil, err
		}
		return &ConversationState{Conversation: *c}, nil
	}
	res, err := convLoadScript.Run(ctx, s.client, s.convKeys(project), s.convBase(project), id).Slice()
	if err != nil {
		return nil, fmt.Errorf("load conversation: %w", err)
	}
	if len(res) == 0 {
		return nil, ErrNotFound
	}
	obj, _ := res[0].(string)
	c, err := DecodeConversation([]byte(obj))
	if err != nil {
		return nil, err
	}
	st := &ConversationState{Conversation: *c, Items: make([]json.RawMessage, 0, len(res)-1)}
	for _, v := range res[1:] {
		it, _ := v.(string)
		if !isObject(json.RawMessage(it)) {
			return nil, errors.New("load conversation: an item is not an object")
		}
		st.Items = append(st.Items, json.RawMessage(it))
	}
	return st, nil
}

// AppendItems implements ConversationStore.
func (s *Redis) AppendItems(ctx context.Context, project, id string, items []json.RawMessage) error {
	items, ids, _, ok := uniqueItems(items)
	if !ok {
		return errNoItemID
	}
	args := append(s.convArgs(project, id, 1+2*len(items)), s.limits.MaxBytes)
	args = appendItemArgs(args, items, ids)
	n, err := convAppendScript.Run(ctx, s.client, s.convKeys(project), args...).Int64()
	switch {
	case err != nil:
		return fmt.Errorf("append to conversation: %w", err)
	case n == -1:
		return ErrNotFound
	case n == -2:
		return ErrTooLarge
	}
	return nil
}

// UpdateConversation implements ConversationStore.
func (s *Redis) UpdateConversation(ctx context.Context, project, id string, metadata map[string]string) (*Conversation, error) {
	st, err := s.GetConversation(ctx, project, id, false)
	if err != nil {
		return nil, err
	}
	c := st.Conversation
	c.Metadata = metadata
	args := append(s.convArgs(project, id, 1), encodeConversation(&c))
	n, err := convSetScript.Run(ctx, s.client, s.convKeys(project), args...).Int64()
	if err != nil {
		return nil, fmt.Errorf("update conversation: %w", err)
	}
	if n == 0 {
		return nil, ErrNotFound // deleted meanwhile
	}
	return DecodeConversation(encodeConversation(&c))
}

// DeleteConversation implements ConversationStore.
func (s *Redis) DeleteConversation(ctx context.Context, project, id string) error {
	n, err := convDeleteScript.Run(ctx, s.client, s.convKeys(project), s.convArgs(project, id, 0)...).Int64()
	if err != nil {
		return fmt.Errorf("delete conversation: %w", err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// DeleteItem implements ConversationStore.
func (s *Redis) DeleteItem(ctx context.Context, project, id, itemID string) (*Conversation, error) {
	args := append(s.convArgs(project, id, 1), itemID)
	res, err := convDeleteItemScript.Run(ctx, s.client, s.convKeys(project), args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("delete conversation item: %w", err)
	}
	if len(res) == 0 {
		return nil, ErrNotFound
	}
	obj, _ := res[0].(string)
	c, err := DecodeConversation([]byte(obj))
	if err != nil {
		return nil, err
	}
	if len(res) < 2 {
		return nil, ErrItemNotFound
	}
	return c, nil
}
