package ratelimit

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed limiter.lua
var scriptSource string

// script is loaded once (Load at start, and again by EVAL whenever Redis
// answers NOSCRIPT, e.g. after a restart) and run by EVALSHA.
var script = redis.NewScript(scriptSource)

// defaultTag is the hash tag of the counters that name no owner (the live
// pods, and counters built without a Tag).
const defaultTag = "rl"

// Redis is the Store shared by every pod: each call is one EVALSHA of
// limiter.lua. Every key carries its counter's Tag as a Redis Cluster hash
// tag, so an owner's counters share one slot and owners spread over the
// masters. On one Redis a call takes every counter at once, whatever the
// tags; on a Redis Cluster a call whose counters have several tags becomes
// one EVALSHA per tag, sent together in one pipeline (one round trip,
// answered by each master in parallel), and a reservation refused by one
// of them gives back what the others took (see Reserve).
type Redis struct {
	client  redis.UniversalClient
	prefix  string
	cluster bool
	// serverClock sends now = 0 so the script reads Redis's own clock,
	// the one clock every pod shares.
	serverClock bool
	// channel, when set, is where a settlement that gives room back
	// publishes pod (see limiter.lua): the wake-up of other pods' waiters.
	channel, pod string
	// timeout bounds a batch of reservations sent together for several
	// callers (together.go); 0 is DefaultTimeout.
	timeout  time.Duration
	together together
}

// settledChannel is the pub/sub channel of settlements that gave room
// back, after the prefix.
const settledChannel = "{rl}:settled"

// Notify makes settlements that give room back publish pod on the
// prefix's settled channel, in the same script call (no extra round trip).
func (s *Redis) Notify(pod string) {
	s.channel, s.pod = s.prefix+settledChannel, pod
}

// Channel is the pub/sub channel Notify publishes on.
func (s *Redis) Channel() string { return s.prefix + settledChannel }

var _ Store = (*Redis)(nil)

// NewRedis returns a store over client whose keys start with prefix
// (e.g. "relay:"). With serverClock the script uses Redis's TIME instead
// of the now it is given: pods' clocks may drift, Redis's is one.
func NewRedis(client redis.UniversalClient, prefix string, serverClock bool) *Redis {
	_, cluster := client.(*redis.ClusterClient)
	return &Redis{client: client, prefix: prefix, cluster: cluster, serverClock: serverClock}
}

// Load loads the script into Redis's script cache (every master's, on a
// cluster) so the first request does not pay for it.
func (s *Redis) Load(ctx context.Context) error {
	if err := script.Load(ctx, s.client).Err(); err != nil {
		return fmt.Errorf("load limiter script: %w", err)
	}
	return nil
}

func kindCode(k Kind) string {
	switch k {
	case KindWindow:
		return "w"
	case KindLease:
		return "l"
	case KindSpacing:
		return "s"
	case KindPeriod:
		return "p"
	case kindHeartbeat:
		return "h"
	}
	return ""
}

// kindHeartbeat marks this pod alive in the pods set (renew only).
const kindHeartbeat Kind = 100

// key is c's Redis key: the prefix, the tag in braces, the rest of c.Key
// and the kind's suffix.
func (s *Redis) key(c *Counter) string {
	tag, rest := c.Tag, c.Key
	if tag == "" {
		tag = defaultTag
		rest = ":" + rest
	} else {
		rest = strings.TrimPrefix(rest, tag)
	}
	var suffix string
	switch c.Kind {
	case KindWindow:
		suffix = ":w" // and ":wb", its older buckets
	case KindLease:
		suffix = ":lease"
	case KindSpacing:
		suffix = ":tat"
	}
	return s.prefix + "{" + tag + "}" + rest + suffix
}

// item is one counter of a call: what the script's five fields carry.
type item struct {
	c      *Counter
	room   int64 // the limit, less the amount for windows and periods when reserving
	amount int64
	extra  string
}

// call is one script run: its items' indexes in the request, its keys and
// arguments, and what it answered.
type call struct {
	idx  []int
	keys []string
	args []any
	out  []int64
	err  error
}

// calls builds the script runs for items: one, or on a cluster one per tag.
func (s *Redis) calls(mode string, now time.Time, items []item) []*call {
	t := now.UnixMilli()
	if s.serverClock {
		t = 0
	}
	cs := make([]*call, 0, 1)
	byTag := func(tag string) *call {
		if !s.cluster && len(cs) > 0 {
			return cs[0]
		}
		for i, x := range cs {
			if items[x.idx[0]].c.Tag == tag {
				return cs[i]
			}
		}
		// Sized for every item: one call is the common case.
		x := &call{idx: make([]int, 0, len(items)), keys: make([]string, 0, 2*len(items)), args: make([]any, 3, 3+5*len(items))}
		x.args[0], x.args[1] = mode, t
		cs = append(cs, x)
		return x
	}
	for i := range items {
		it := &items[i]
		code := kindCode(it.c.Kind)
		if code == "" {
			continue
		}
		x := byTag(it.c.Tag)
		x.idx = append(x.idx, i)
		k := s.key(it.c)
		x.keys = append(x.keys, k)
		if it.c.Kind == KindWindow {
			x.keys = append(x.keys, k+"b")
		}
		x.args = append(x.args, code, it.room, ms(it.c.Window), it.amount, it.extra)
	}
	for _, x := range cs {
		x.args[2] = len(x.idx)
	}
	return cs
}

// run runs the calls: one EVALSHA, or a pipeline of them (a cluster sends
// each master its part in parallel), and sets each call's answer or
// error; it returns the first error. A script cache emptied by a restart
// is filled again and the calls it refused are sent once more (only
// those: a call that ran must not run twice).
func (s *Redis) run(ctx context.Context, cs []*call) error {
	if len(cs) == 1 {
		x := cs[0]
		v, err := script.Run(ctx, s.client, x.keys, x.args...).Slice()
		if err != nil {
			x.err = fmt.Errorf("run limiter script: %w", err)
			return x.err
		}
		x.out, x.err = int64s(v)
		return x.err
	}
	todo := cs
	for attempt := 0; ; attempt++ {
		cmds := make([]*redis.Cmd, len(todo))
		_, _ = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, x := range todo {
				cmds[i] = p.EvalSha(ctx, script.Hash(), x.keys, x.args...)
			}
			return nil
		})
		var again []*call
		for i, x := range todo {
			v, err := cmds[i].Slice()
			if err == nil {
				x.out, x.err = int64s(v)
				continue
			}
			x.err = fmt.Errorf("run limiter script: %w", err)
			if redis.HasErrorPrefix(err, "NOSCRIPT") {
				again = append(again, x)
			}
		}
		if len(again) == 0 || attempt > 0 {
			return callsErr(cs)
		}
		if err := s.Load(ctx); err != nil {
			return err
		}
		todo = again
	}
}

// Reserve implements Store. On a cluster, counters of several tags are
// taken by one script per tag, each atomic; when one refuses, what the
// others took is given back before Reserve returns (a second round trip,
// on refusals only). Until then those counters hold a little more than
// was admitted — a reservation may be refused that would have fit, never
// the other way round.
func (s *Redis) Reserve(ctx context.Context, cs []Counter, now time.Time) (Verdict, error) {
	return s.reserve(ctx, "r", cs, now)
}

// Peek implements Store.
func (s *Redis) Peek(ctx context.Context, cs []Counter, now time.Time) (Verdict, error) {
	return s.reserve(ctx, "p", cs, now)
}

func (s *Redis) reserve(ctx context.Context, mode string, cs []Counter, now time.Time) (Verdict, error) {
	v := Verdict{OK: true, Worst: -1, At: now.UnixMilli()}
	items := make([]item, len(cs))
	for i := range cs {
		c := &cs[i]
		items[i] = item{c: c, room: c.Limit, amount: c.Amount}
		switch c.Kind {
		case KindWindow:
			items[i].room = c.Limit - c.Amount
		case KindLease:
			items[i].extra = c.Lease
		case KindPeriod:
			items[i].room = c.Limit - c.Amount
			items[i].extra = strconv.FormatInt(c.End.UnixMilli(), 10)
		}
	}
	calls := s.calls(mode, now, items)
	if len(calls) == 0 {
		return v, nil
	}
	run := s.run
	if mode == "r" {
		run = s.runTogether
	}
	if err := run(ctx, calls); err != nil {
		return v, err
	}
	if len(calls) > 1 {
		v.AtOf = make([]int64, len(cs))
	}
	var worst int64 // ms; -2 never
	var taken []*call
	for _, x := range calls {
		if len(x.out) < 4 {
			return v, fmt.Errorf("limiter script: unexpected reply %v", x.out)
		}
		v.At = x.out[3]
		for _, i := range x.idx {
			if v.AtOf != nil {
				v.AtOf[i] = x.out[3]
			}
		}
		if x.out[0] == 1 && mode == "r" {
			// Fits: the reply carries the time each spacing counter set,
			// then what each counter held before.
			j := 4
			for _, i := range x.idx {
				if cs[i].Kind == KindSpacing && j < len(x.out) {
					items[i].extra = strconv.FormatInt(x.out[j], 10)
					j++
				}
			}
			if j+len(x.idx) <= len(x.out) {
				if v.Used == nil {
					v.Used = make([]int64, len(cs))
				}
				for k, i := range x.idx {
					v.Used[i] = x.out[j+k]
				}
			}
			taken = append(taken, x)
			continue
		}
		if v.Used == nil {
			v.Used = make([]int64, len(cs))
		}
		if v.Reset == nil {
			v.Reset = make([]time.Duration, len(cs))
		}
		for j, i := range x.idx {
			if 4+2*j+1 < len(x.out) {
				v.Used[i] = x.out[4+2*j]
				v.Reset[i] = time.Duration(x.out[4+2*j+1]) * time.Millisecond
			}
		}
		if x.out[0] == 1 {
			continue
		}
		w := x.out[1]
		if worst != -2 && (w == -2 || w > worst) {
			worst = w
			if k := int(x.out[2]); k >= 0 && k < len(x.idx) {
				v.Worst = x.idx[k]
			}
		}
	}
	if worst == 0 {
		return v, nil
	}
	v.OK = false
	v.Wait = time.Duration(worst) * time.Millisecond
	if worst == -2 {
		v.Wait = Never
	}
	if len(taken) > 0 {
		if err := s.undo(ctx, taken, items, now); err != nil {
			return v, err
		}
	}
	return v, nil
}

// undo gives back what the calls taken took: their windows' and periods'
// amounts, their leases and their spacing slots.
func (s *Redis) undo(ctx context.Context, taken []*call, items []item, now time.Time) error {
	var adj []Adjust
	for _, x := range taken {
		for _, i := range x.idx {
			c := *items[i].c
			a := Adjust{Counter: c, At: x.out[3], Delta: -c.Amount}
			if c.Kind == KindSpacing {
				a.At, _ = strconv.ParseInt(items[i].extra, 10, 64)
			}
			adj = append(adj, a)
		}
	}
	if err := s.Settle(ctx, adj, now); err != nil {
		return fmt.Errorf("give back a refused reservation: %w", err)
	}
	return nil
}

// settleChunk caps the counters of one settling script call (and of one
// hold of the memory store's lock): a settle goroutine's whole backlog is
// sent as several script calls in one pipeline — one round trip — and
// Redis serves other clients between them, so a large backlog does not
// stall reservations behind one long script.
const settleChunk = 256

// Settle implements Store. A batch's adjustments to one window bucket, or
// to one period, are summed first: a settle goroutine that drains many
// requests at once pays for each counter once, not once per request. The
// batch is one round trip: one script call per owner (on a cluster) and
// per settleChunk counters, pipelined.
func (s *Redis) Settle(ctx context.Context, adj []Adjust, now time.Time) error {
	adj = merge(adj)
	items := make([]item, len(adj))
	for i := range adj {
		a := &adj[i]
		items[i] = item{c: &a.Counter, room: a.Limit, amount: a.Delta}
		switch a.Kind {
		case KindWindow, KindSpacing:
			items[i].extra = strconv.FormatInt(a.At, 10)
		case KindLease:
			items[i].extra = a.Lease
		}
	}
	var calls []*call
	for len(items) > 0 {
		n := min(len(items), settleChunk)
		calls = append(calls, s.calls("s", now, items[:n])...)
		items = items[n:]
	}
	if len(calls) == 0 {
		return nil
	}
	if s.channel != "" {
		for _, x := range calls {
			x.args = append(x.args, s.channel, s.pod)
		}
	}
	return s.run(ctx, calls)
}

// merge sums the adjustments that land on the same window bucket or the
// same period, in the order they first appear; the others stay as they are.
func merge(adj []Adjust) []Adjust {
	type at struct {
		tag, key string
		exp      int64
	}
	seen := make(map[at]int, len(adj))
	out := adj[:0:0]
	for _, a := range adj {
		var k at
		switch a.Kind {
		case KindWindow:
			k = at{a.Tag, a.Key, expiry(a.At, ms(a.Window))}
		case KindPeriod:
			k = at{a.Tag, a.Key, 0}
		default:
			out = append(out, a)
			continue
		}
		if i, ok := seen[k]; ok {
			out[i].Delta += a.Delta
			continue
		}
		seen[k] = len(out)
		out = append(out, a)
	}
	return out
}

// Renew implements Store.
func (s *Redis) Renew(ctx context.Context, leases []Counter, pod string, ttl time.Duration, now time.Time) (int, error) {
	items := make([]item, 0, len(leases)+1)
	for i := range leases {
		c := leases[i]
		c.Window = ttl
		items = append(items, item{c: &c, extra: c.Lease})
	}
	items = append(items, item{c: &Counter{Kind: kindHeartbeat, Key: "pods", Window: ttl}, extra: pod})
	calls := s.calls("n", now, items)
	if err := s.run(ctx, calls); err != nil {
		return 0, err
	}
	for _, x := range calls {
		if x.idx[len(x.idx)-1] == len(items)-1 && len(x.out) > 0 {
			return int(x.out[0]), nil
		}
	}
	return 0, errors.New("limiter script: no pod count in the reply")
}

func int64s(v []any) ([]int64, error) {
	out := make([]int64, len(v))
	for i, x := range v {
		n, ok := x.(int64)
		if !ok {
			return nil, errors.New("limiter script: a reply that is not an integer")
		}
		out[i] = n
	}
	return out, nil
}
