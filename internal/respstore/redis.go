package respstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a Store shared by every pod through Redis. A project's keys
// share one hash tag, so a project lives on one Redis Cluster slot and
// each operation is one script call:
//
//	<prefix>resp:{<project>}:r:<id>  the record (string, expires after the TTL)
//	<prefix>resp:{<project>}:index   response ids by creation time (sorted set)
//	<prefix>resp:{<project>}:meta    response id → {size, item ids} (hash)
//	<prefix>resp:{<project>}:items   item id → the newest response holding it (hash)
//	<prefix>resp:{<project>}:bytes   bytes the project holds (counter)
//
// Put prunes expired responses, adds the new one and evicts the oldest
// while the project holds more than the bound; the bookkeeping keys expire
// a TTL after the project's last Put.
type Redis struct {
	client redis.UniversalClient
	prefix string
	limits Limits
	now    func() time.Time
}

// NewRedis returns a Redis store on client; prefix is RELAY_REDIS_PREFIX
// ("relay:" when empty), now nil is time.Now.
func NewRedis(client redis.UniversalClient, prefix string, limits Limits, now func() time.Time) *Redis {
	if prefix == "" {
		prefix = "relay:"
	}
	if now == nil {
		now = time.Now
	}
	return &Redis{client: client, prefix: prefix, limits: limits.withDefaults(), now: now}
}

// Limits implements Store.
func (s *Redis) Limits() Limits { return s.limits }

func (s *Redis) base(project string) string { return s.prefix + "resp:{" + project + "}:" }

func (s *Redis) keys(project string) []string {
	b := s.base(project)
	return []string{b + "index", b + "meta", b + "items", b + "bytes"}
}

// drop is the Lua both scripts share: it removes one response and its
// bookkeeping. ARGV[1] is the record key prefix.
const dropLua = `
local function drop(id)
  local m = redis.call('HGET', KEYS[2], id)
  if m then
    local meta = cjson.decode(m)
    redis.call('DECRBY', KEYS[4], meta[1])
    for i = 2, #meta do
      if redis.call('HGET', KEYS[3], meta[i]) == id then redis.call('HDEL', KEYS[3], meta[i]) end
    end
    redis.call('HDEL', KEYS[2], id)
  end
  redis.call('ZREM', KEYS[1], id)
  return redis.call('DEL', ARGV[1] .. id)
end
`

// putScript: ARGV[2] id, ARGV[3] record, ARGV[4] TTL ms, ARGV[5] now ms,
// ARGV[6] the project bound, ARGV[7] the meta JSON, ARGV[8…] item ids.
var putScript = redis.NewScript(dropLua + `
local ttl, now = tonumber(ARGV[4]), tonumber(ARGV[5])
for _, old in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - ttl)) do drop(old) end
drop(ARGV[2])
redis.call('SET', ARGV[1] .. ARGV[2], ARGV[3], 'PX', ttl)
redis.call('ZADD', KEYS[1], now, ARGV[2])
redis.call('HSET', KEYS[2], ARGV[2], ARGV[7])
for i = 8, #ARGV do redis.call('HSET', KEYS[3], ARGV[i], ARGV[2]) end
local total = redis.call('INCRBY', KEYS[4], string.len(ARGV[3]))
local evicted = 0
while total > tonumber(ARGV[6]) do
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
  if not oldest or oldest == ARGV[2] then break end
  drop(oldest)
  evicted = evicted + 1
  total = tonumber(redis.call('GET', KEYS[4]) or '0')
end
for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], ttl) end
return evicted
`)

// deleteScript: ARGV[2] id.
var deleteScript = redis.NewScript(dropLua + `
return drop(ARGV[2])
`)

// loadScript: ARGV[2] the response id or "", ARGV[3…] item ids. It
// returns the response's record (or false), then the records of the
// responses that hold the items, each once.
var loadScript = redis.NewScript(`
local out = {false}
if ARGV[2] ~= '' then out[1] = redis.call('GET', ARGV[1] .. ARGV[2]) end
local seen = {}
for i = 3, #ARGV do
  local rid = redis.call('HGET', KEYS[3], ARGV[i])
  if rid and not seen[rid] then
    seen[rid] = true
    local rec = redis.call('GET', ARGV[1] .. rid)
    if rec then out[#out + 1] = rec end
  end
end
return out
`)

// Load implements Store.
func (s *Redis) Load(ctx context.Context, project, id string, itemIDs []string) (Loaded, error) {
	var out Loaded
	if len(itemIDs) == 0 {
		if id == "" {
			return out, nil
		}
		data, err := s.client.Get(ctx, s.base(project)+"r:"+id).Bytes()
		if errors.Is(err, redis.Nil) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("load stored response: %w", err)
		}
		out.Response, err = Decode(data)
		return out, err
	}
	args := make([]any, 0, 2+len(itemIDs))
	args = append(args, s.base(project)+"r:", id)
	for _, it := range itemIDs {
		args = append(args, it)
	}
	res, err := loadScript.Run(ctx, s.client, s.keys(project), args...).Slice()
	if err != nil {
		return out, fmt.Errorf("load stored responses: %w", err)
	}
	var holders []*Record
	for i, v := range res {
		data, ok := v.(string)
		if !ok {
			continue // a missing response
		}
		rec, err := Decode([]byte(data))
		if err != nil {
			return out, err
		}
		if i == 0 {
			out.Response = rec
		} else {
			holders = append(holders, rec)
		}
	}
	if out.Response != nil {
		holders = append(holders, out.Response)
	}
	out.Items = findItems(itemIDs, holders)
	return out, nil
}

// Put implements Store.
func (s *Redis) Put(ctx context.Context, project string, rec *Record) error {
	data, ids, perr := prepare(rec, s.limits.MaxBytes)
	meta, _ := json.Marshal(append([]any{len(data)}, anySlice(ids)...)) // [size, item ids…]
	args := make([]any, 0, 7+len(ids))
	args = append(args, s.base(project)+"r:", rec.ID, data, s.limits.TTL.Milliseconds(), s.now().UnixMilli(), s.limits.ProjectMaxBytes, meta)
	for _, id := range ids {
		args = append(args, id)
	}
	if err := putScript.Run(ctx, s.client, s.keys(project), args...).Err(); err != nil {
		return fmt.Errorf("store response: %w", err)
	}
	return perr
}

// Delete implements Store.
func (s *Redis) Delete(ctx context.Context, project, id string) error {
	n, err := deleteScript.Run(ctx, s.client, s.keys(project), s.base(project)+"r:", id).Int64()
	if err != nil {
		return fmt.Errorf("delete stored response: %w", err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

func anySlice(ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}
