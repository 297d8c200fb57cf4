package objects

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/relay-llm/relay/internal/snapshot"
)

//go:embed redis.lua
var scriptSource string

// script is every call but Get: one EVALSHA each (EVAL again after a
// NOSCRIPT, which go-redis does).
var script = redis.NewScript(scriptSource)

// dueScript takes up to ARGV[2] members of KEYS[1] due by ARGV[1] (ms) and
// moves each to ARGV[3] (ms), so that two pods' sweeps take each once.
var dueScript = redis.NewScript(`
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, x in ipairs(ids) do redis.call('ZADD', KEYS[1], ARGV[3], x) end
return ids
`)

// Redis is the Index every pod shares. A project's list of one kind is a
// sorted set at <prefix>obj:{<project>}:<kind>, each object a hash at
// that key, ":" and its id (field "o" the entry as JSON, "c:<mark>" its
// claims). The braces are a Redis Cluster hash tag: a project's entries
// share a slot, so the script may touch an object's key through the list's.
// The pending list is one sorted set, <prefix>obj:pending (score = due
// time in ms, member = project, kind and id joined by "|"), in its own
// slot: it is never touched in the same script as a project's keys.
type Redis struct {
	client redis.UniversalClient
	prefix string
	opts   Options
}

var _ Index = (*Redis)(nil)

// NewRedis returns an index over client whose keys start with prefix
// (e.g. "relay:").
func NewRedis(client redis.UniversalClient, prefix string, opts Options) *Redis {
	return &Redis{client: client, prefix: prefix, opts: opts.withDefaults()}
}

func (r *Redis) list(project snapshot.ID, kind Kind) string {
	return r.prefix + "obj:{" + project.String() + "}:" + string(kind)
}

func (r *Redis) cut() int64 { return r.opts.Now().Add(-r.opts.Retention).UnixMilli() }

// Put implements Index.
func (r *Redis) Put(ctx context.Context, o Object) error {
	if err := check(&o); err != nil {
		return err
	}
	v, err := json.Marshal(&o)
	if err != nil {
		return fmt.Errorf("put object: %w", err)
	}
	l := r.list(o.ProjectID, o.Kind)
	created := o.CreatedAt.UnixMilli()
	// Redis expires on its own clock: a time to live, not a moment.
	ttl := max(o.CreatedAt.Add(r.opts.Retention).Sub(r.opts.Now()).Milliseconds(), 1)
	if err := script.Run(ctx, r.client, []string{l}, "put", l+":", o.ID, v, created, ttl, r.cut(), r.opts.MaxPerKind).Err(); err != nil {
		return fmt.Errorf("put object: %w", err)
	}
	return nil
}

// live decodes an entry, ErrNotFound when it is past retention (Redis
// expires it on its own clock; this holds the index to Options.Now).
func (r *Redis) live(v string) (Object, error) {
	var o Object
	if err := json.Unmarshal([]byte(v), &o); err != nil {
		return Object{}, fmt.Errorf("decode object: %w", err)
	}
	if o.CreatedAt.UnixMilli() < r.cut() {
		return Object{}, ErrNotFound
	}
	return o, nil
}

// Get implements Index.
func (r *Redis) Get(ctx context.Context, project snapshot.ID, kind Kind, id string) (Object, error) {
	v, err := r.client.HGet(ctx, r.list(project, kind)+":"+id, "o").Result()
	if errors.Is(err, redis.Nil) {
		return Object{}, ErrNotFound
	}
	if err != nil {
		return Object{}, fmt.Errorf("get object: %w", err)
	}
	return r.live(v)
}

// List implements Index.
func (r *Redis) List(ctx context.Context, project snapshot.ID, kind Kind, p Page) ([]Object, bool, error) {
	l := r.list(project, kind)
	limit := p.limit()
	order := "desc"
	if p.Asc {
		order = "asc"
	}
	vs, err := script.Run(ctx, r.client, []string{l}, "list", l+":", p.After, limit+1, r.cut(), order).StringSlice()
	if err != nil {
		return nil, false, fmt.Errorf("list objects: %w", err)
	}
	out := make([]Object, 0, min(len(vs), limit))
	for _, v := range vs {
		if len(out) == limit {
			return out, true, nil
		}
		o, err := r.live(v)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, false, fmt.Errorf("list objects: %w", err)
		}
		out = append(out, o)
	}
	return out, false, nil
}

// Delete implements Index.
func (r *Redis) Delete(ctx context.Context, project snapshot.ID, kind Kind, id string) error {
	l := r.list(project, kind)
	n, err := script.Run(ctx, r.client, []string{l}, "delete", l+":", id).Int64()
	if err != nil {
		return fmt.Errorf("delete object: %w", err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return r.Unwatch(ctx, Pending{project, kind, id})
}

// Claim implements Index.
func (r *Redis) Claim(ctx context.Context, project snapshot.ID, kind Kind, id, mark string) (bool, error) {
	l := r.list(project, kind)
	n, err := script.Run(ctx, r.client, []string{l}, "claim", l+":", id, mark).Int64()
	if err != nil {
		return false, fmt.Errorf("claim object: %w", err)
	}
	if n < 0 {
		return false, ErrNotFound
	}
	return n == 1, nil
}

func (r *Redis) pendingKey() string { return r.prefix + "obj:pending" }

func pendingMember(p Pending) string {
	return p.ProjectID.String() + "|" + string(p.Kind) + "|" + p.ID
}

// Watch implements Index.
func (r *Redis) Watch(ctx context.Context, p Pending, at time.Time) error {
	if err := r.client.ZAdd(ctx, r.pendingKey(), redis.Z{Score: float64(at.UnixMilli()), Member: pendingMember(p)}).Err(); err != nil {
		return fmt.Errorf("watch object: %w", err)
	}
	return nil
}

// Due implements Index.
func (r *Redis) Due(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Pending, error) {
	if limit <= 0 {
		return nil, nil
	}
	ms, err := dueScript.Run(ctx, r.client, []string{r.pendingKey()}, now.UnixMilli(), limit, now.Add(lease).UnixMilli()).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("due objects: %w", err)
	}
	out := make([]Pending, 0, len(ms))
	for _, m := range ms {
		project, rest, _ := strings.Cut(m, "|")
		kind, id, _ := strings.Cut(rest, "|")
		pid, err := uuid.Parse(project)
		if err != nil || !Kind(kind).Valid() || id == "" {
			r.client.ZRem(ctx, r.pendingKey(), m) // not ours to read: drop it
			continue
		}
		out = append(out, Pending{ProjectID: pid, Kind: Kind(kind), ID: id})
	}
	return out, nil
}

// Unwatch implements Index.
func (r *Redis) Unwatch(ctx context.Context, p Pending) error {
	if err := r.client.ZRem(ctx, r.pendingKey(), pendingMember(p)).Err(); err != nil {
		return fmt.Errorf("unwatch object: %w", err)
	}
	return nil
}
