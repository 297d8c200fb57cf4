package cache

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// MemoryIndex is an Index in process memory, for one pod: the same
// buckets as RedisIndex, entries expiring by the clock, the oldest out
// first past MaxBytes.
type MemoryIndex struct {
	now      func() time.Time
	maxBytes int

	mu    sync.Mutex
	parts map[string]*memPart
	order []memRef // insertion order, for eviction
	bytes int
}

type memPart struct {
	buckets map[string][]string // newest first, up to BucketCap
	entries map[string]memVec
}

type memVec struct {
	vec, val []byte
	expires  time.Time
}

type memRef struct{ part, id string }

// NewMemoryIndex returns a MemoryIndex of maxBytes (0: 64 MiB) on clock
// now (nil: time.Now).
func NewMemoryIndex(maxBytes int, now func() time.Time) *MemoryIndex {
	if maxBytes <= 0 {
		maxBytes = 64 << 20
	}
	if now == nil {
		now = time.Now
	}
	return &MemoryIndex{now: now, maxBytes: maxBytes, parts: map[string]*memPart{}}
}

// Candidates implements Index.
func (m *MemoryIndex) Candidates(_ context.Context, part string, buckets []string) ([]Candidate, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.parts[part]
	if p == nil {
		return nil, nil
	}
	now := m.now()
	seen := map[string]bool{}
	var out []Candidate
	for _, b := range buckets {
		for _, id := range p.buckets[b] {
			e, ok := p.entries[id]
			if seen[id] || !ok || !now.Before(e.expires) {
				continue
			}
			seen[id] = true
			out = append(out, Candidate{ID: id, Vec: e.vec})
		}
	}
	return out, nil
}

// Populated implements Index.
func (m *MemoryIndex) Populated(_ context.Context, part string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.parts[part]
	if p == nil {
		return false, nil
	}
	now := m.now()
	for _, e := range p.entries {
		if now.Before(e.expires) {
			return true, nil
		}
	}
	return false, nil
}

// Get implements Index.
func (m *MemoryIndex) Get(_ context.Context, part, id string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.parts[part]; p != nil {
		if e, ok := p.entries[id]; ok && m.now().Before(e.expires) {
			return e.val, nil
		}
	}
	return nil, ErrMiss
}

// Put implements Index.
func (m *MemoryIndex) Put(_ context.Context, part, id string, buckets []string, vec, val []byte, ttl time.Duration) error {
	size := len(vec) + len(val)
	if size > m.maxBytes {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.drop(part, id)
	p := m.parts[part]
	if p == nil {
		p = &memPart{buckets: map[string][]string{}, entries: map[string]memVec{}}
		m.parts[part] = p
	}
	p.entries[id] = memVec{vec: vec, val: val, expires: m.now().Add(ttl)}
	m.bytes += size
	m.order = append(m.order, memRef{part, id})
	for _, b := range buckets {
		l := append([]string{id}, p.buckets[b]...)
		if len(l) > BucketCap {
			l = l[:BucketCap]
		}
		p.buckets[b] = l
	}
	for (m.bytes > m.maxBytes || len(p.entries) > MaxPartitionEntries) && len(m.order) > 1 {
		r := m.order[0]
		m.order = m.order[1:]
		if r != (memRef{part, id}) {
			m.drop(r.part, r.id)
		}
	}
	return nil
}

// drop forgets an entry; the bucket lists forget it as newer ones push it
// out, and lookups skip it meanwhile.
func (m *MemoryIndex) drop(part, id string) {
	p := m.parts[part]
	if p == nil {
		return
	}
	if e, ok := p.entries[id]; ok {
		m.bytes -= len(e.vec) + len(e.val)
		delete(p.entries, id)
	}
	if len(p.entries) == 0 {
		delete(m.parts, part)
	}
}

// Purge implements Index.
func (m *MemoryIndex) Purge(_ context.Context, pattern string) (int, error) {
	if _, err := path.Match(pattern, ""); err != nil {
		return 0, fmt.Errorf("purge %q: %w", pattern, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, p := range m.parts {
		if ok, _ := path.Match(pattern, k+":"); ok {
			for id := range p.entries {
				m.drop(k, id)
				n++
			}
			delete(m.parts, k)
		}
	}
	kept := m.order[:0]
	for _, r := range m.order {
		if p := m.parts[r.part]; p != nil {
			if _, ok := p.entries[r.id]; ok {
				kept = append(kept, r)
			}
		}
	}
	m.order = kept
	return n, nil
}

// RedisIndex is an Index in Redis (7.0, no modules), shared by every pod.
// A partition P is a handful of keys in one hash slot:
//
//	P:t        sorted set, entry id → expiry (unix ms)
//	P:v        hash, entry id → quantized vector
//	P:b:<bkt>  list, the newest BucketCap entry ids of one bucket
//	P:e:<id>   string, the entry (with its own expiry)
//
// A lookup is one script: read the buckets, drop the expired ids, return
// the vectors (one round trip); a hit then reads its entry. A fill is one
// script that also prunes expired and surplus ids.
type RedisIndex struct {
	client redis.UniversalClient
	prefix string
}

// NewRedisIndex returns an Index on client whose keys all start with prefix.
func NewRedisIndex(client redis.UniversalClient, prefix string) *RedisIndex {
	return &RedisIndex{client: client, prefix: prefix}
}

var candidatesScript = redis.NewScript(`
local seen, ids = {}, {}
for i = 3, #KEYS do
  for _, id in ipairs(redis.call('LRANGE', KEYS[i], 0, -1)) do
    if not seen[id] then seen[id] = true; ids[#ids + 1] = id end
  end
end
if #ids == 0 then return {} end
local now = tonumber(ARGV[1])
local exp = redis.call('ZMSCORE', KEYS[1], unpack(ids))
local live = {}
for i, id in ipairs(ids) do
  if exp[i] and tonumber(exp[i]) > now then live[#live + 1] = id end
end
if #live == 0 then return {} end
local vecs = redis.call('HMGET', KEYS[2], unpack(live))
local out = {}
for i, id in ipairs(live) do
  if vecs[i] then out[#out + 1] = id; out[#out + 1] = vecs[i] end
end
return out
`)

// putScript: KEYS = P:t, P:v, P:e:<id>, buckets…; ARGV = id, vec, val,
// ttl ms, now ms, bucket cap, max entries.
var putScript = redis.NewScript(`
local id, ttl, now = ARGV[1], tonumber(ARGV[4]), tonumber(ARGV[5])
local cap, most = tonumber(ARGV[6]), tonumber(ARGV[7])
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 64)
if #old > 0 then
  redis.call('ZREM', KEYS[1], unpack(old))
  redis.call('HDEL', KEYS[2], unpack(old))
end
redis.call('ZADD', KEYS[1], now + ttl, id)
redis.call('HSET', KEYS[2], id, ARGV[2])
redis.call('SET', KEYS[3], ARGV[3], 'PX', ttl)
local over = redis.call('ZCARD', KEYS[1]) - most
if over > 0 then
  local gone = redis.call('ZPOPMIN', KEYS[1], over)
  for i = 1, #gone, 2 do redis.call('HDEL', KEYS[2], gone[i]) end
end
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
for i = 4, #KEYS do
  redis.call('LPUSH', KEYS[i], id)
  redis.call('LTRIM', KEYS[i], 0, cap - 1)
  redis.call('PEXPIRE', KEYS[i], ttl)
end
return 1
`)

func (r *RedisIndex) key(part, suffix string) string { return r.prefix + part + ":" + suffix }

// Candidates implements Index.
func (r *RedisIndex) Candidates(ctx context.Context, part string, buckets []string) ([]Candidate, error) {
	keys := make([]string, 0, 2+len(buckets))
	keys = append(keys, r.key(part, "t"), r.key(part, "v"))
	for _, b := range buckets {
		keys = append(keys, r.key(part, "b:"+b))
	}
	res, err := candidatesScript.Run(ctx, r.client, keys, time.Now().UnixMilli()).Slice()
	if err != nil {
		return nil, fmt.Errorf("semantic cache candidates: %w", err)
	}
	out := make([]Candidate, 0, len(res)/2)
	for i := 0; i+1 < len(res); i += 2 {
		id, _ := res[i].(string)
		vec, _ := res[i+1].(string)
		out = append(out, Candidate{ID: id, Vec: []byte(vec)})
	}
	return out, nil
}

// Populated implements Index: the partition's expiry set exists while
// any entry it names has not expired (each fill sets its expiry to the
// newest entry's).
func (r *RedisIndex) Populated(ctx context.Context, part string) (bool, error) {
	n, err := r.client.Exists(ctx, r.key(part, "t")).Result()
	if err != nil {
		return false, fmt.Errorf("semantic cache partition: %w", err)
	}
	return n > 0, nil
}

// Get implements Index.
func (r *RedisIndex) Get(ctx context.Context, part, id string) ([]byte, error) {
	b, err := r.client.Get(ctx, r.key(part, "e:"+id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrMiss
	}
	if err != nil {
		return nil, fmt.Errorf("get semantic cache entry: %w", err)
	}
	return b, nil
}

// Put implements Index.
func (r *RedisIndex) Put(ctx context.Context, part, id string, buckets []string, vec, val []byte, ttl time.Duration) error {
	keys := make([]string, 0, 3+len(buckets))
	keys = append(keys, r.key(part, "t"), r.key(part, "v"), r.key(part, "e:"+id))
	for _, b := range buckets {
		keys = append(keys, r.key(part, "b:"+b))
	}
	ms := max(ttl.Milliseconds(), 1)
	err := putScript.Run(ctx, r.client, keys, id, vec, val, ms, time.Now().UnixMilli(),
		strconv.Itoa(BucketCap), strconv.Itoa(MaxPartitionEntries)).Err()
	if err != nil {
		return fmt.Errorf("put semantic cache entry: %w", err)
	}
	return nil
}

// Purge implements Index: every key of the matching partitions, as the
// exact cache's Redis store purges; it counts the entries.
func (r *RedisIndex) Purge(ctx context.Context, pattern string) (int, error) {
	s := NewRedis(r.client, r.prefix)
	n, err := s.Purge(ctx, pattern+":e:*")
	if err != nil {
		return n, err
	}
	_, err = s.Purge(ctx, pattern)
	return n, err
}
