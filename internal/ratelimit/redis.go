package ratelimit

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed limiter.lua
var scriptSource string

// script is loaded once (Load at start, and again by EVAL whenever Redis
// answers NOSCRIPT, e.g. after a restart) and run by EVALSHA.
var script = redis.NewScript(scriptSource)

// hashTag puts every key of the limiter in one Redis Cluster slot, so a
// request's counters — its policy's limits, its budgets and its host
// key's tier limit — are checked in one script call. See
// docs/rate-limits.md for why one slot rather than one per rate limit.
const hashTag = "{rl}"

// Redis is the Store shared by every pod: each call is one EVALSHA of
// limiter.lua.
type Redis struct {
	client redis.UniversalClient
	prefix string // prefix + hashTag + ":"
	// serverClock sends now = 0 so the script reads Redis's own clock,
	// the one clock every pod shares.
	serverClock bool
}

var _ Store = (*Redis)(nil)

// NewRedis returns a store over client whose keys start with prefix
// (e.g. "relay:"). With serverClock the script uses Redis's TIME instead
// of the now it is given: pods' clocks may drift, Redis's is one.
func NewRedis(client redis.UniversalClient, prefix string, serverClock bool) *Redis {
	return &Redis{client: client, prefix: prefix + hashTag + ":", serverClock: serverClock}
}

// Load loads the script into Redis's script cache so the first request
// does not pay for it.
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

// call runs the script over cs; fields gives each counter's amount, at and extra.
func (s *Redis) call(ctx context.Context, mode string, now time.Time, n int, counter func(i int) (c *Counter, amount, at int64)) ([]any, error) {
	keys := make([]string, 0, n+2)
	args := make([]any, 0, 3+6*n)
	t := now.UnixMilli()
	if s.serverClock {
		t = 0
	}
	args = append(args, mode, t, 0)
	count := 0
	for i := range n {
		c, amount, at := counter(i)
		code := kindCode(c.Kind)
		if code == "" {
			continue
		}
		count++
		var extra string
		switch c.Kind {
		case KindWindow:
			keys = append(keys, s.prefix+c.Key+":log", s.prefix+c.Key+":sum")
		case KindLease:
			keys = append(keys, s.prefix+c.Key+":lease")
			extra = c.Lease
		case KindSpacing:
			keys = append(keys, s.prefix+c.Key+":tat")
		case KindPeriod:
			keys = append(keys, s.prefix+c.Key)
			extra = strconv.FormatInt(c.End.UnixMilli(), 10)
		case kindHeartbeat:
			keys = append(keys, s.prefix+c.Key)
			extra = c.Lease
		}
		args = append(args, code, c.Limit, ms(c.Window), amount, at, extra)
	}
	args[2] = count
	if count == 0 {
		return nil, nil
	}
	v, err := script.Run(ctx, s.client, keys, args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("run limiter script: %w", err)
	}
	return v, nil
}

// Reserve implements Store.
func (s *Redis) Reserve(ctx context.Context, cs []Counter, now time.Time) (Verdict, error) {
	return s.reserve(ctx, "r", cs, now)
}

// Peek implements Store.
func (s *Redis) Peek(ctx context.Context, cs []Counter, now time.Time) (Verdict, error) {
	return s.reserve(ctx, "p", cs, now)
}

func (s *Redis) reserve(ctx context.Context, mode string, cs []Counter, now time.Time) (Verdict, error) {
	v := Verdict{OK: true, Worst: -1, At: now.UnixMilli(), Used: make([]int64, len(cs)), Reset: make([]time.Duration, len(cs))}
	out, err := s.call(ctx, mode, now, len(cs), func(i int) (*Counter, int64, int64) { return &cs[i], cs[i].Amount, 0 })
	if err != nil || out == nil {
		return v, err
	}
	ints, err := int64s(out)
	if err != nil || len(ints) < 4 {
		return v, fmt.Errorf("limiter script: unexpected reply %v", out)
	}
	v.At = ints[3]
	// Map the script's counters (kinds zero skipped) back to cs.
	j := 0
	for i := range cs {
		if kindCode(cs[i].Kind) == "" {
			continue
		}
		if 4+2*j+1 < len(ints) {
			v.Used[i] = ints[4+2*j]
			v.Reset[i] = time.Duration(ints[4+2*j+1]) * time.Millisecond
		}
		if int64(j) == ints[2] {
			v.Worst = i
		}
		j++
	}
	if ints[0] == 1 {
		v.Worst = -1
		return v, nil
	}
	v.OK = false
	if ints[1] == -2 {
		v.Wait = Never
	} else {
		v.Wait = time.Duration(ints[1]) * time.Millisecond
	}
	return v, nil
}

// Settle implements Store.
func (s *Redis) Settle(ctx context.Context, adj []Adjust, now time.Time) error {
	_, err := s.call(ctx, "s", now, len(adj), func(i int) (*Counter, int64, int64) { return &adj[i].Counter, adj[i].Delta, adj[i].At })
	return err
}

// Renew implements Store.
func (s *Redis) Renew(ctx context.Context, leases []Counter, pod string, ttl time.Duration, now time.Time) (int, error) {
	hb := Counter{Kind: kindHeartbeat, Key: "pods", Window: ttl, Lease: pod}
	n := len(leases) + 1
	var c Counter
	out, err := s.call(ctx, "n", now, n, func(i int) (*Counter, int64, int64) {
		if i < len(leases) {
			c = leases[i]
			c.Window = ttl
			return &c, 0, 0
		}
		return &hb, 0, 0
	})
	if err != nil {
		return 0, err
	}
	ints, err := int64s(out)
	if err != nil || len(ints) < 1 {
		return 0, fmt.Errorf("limiter script: unexpected reply %v", out)
	}
	return int(ints[0]), nil
}

func int64s(v []any) ([]int64, error) {
	out := make([]int64, len(v))
	for i, x := range v {
		n, ok := x.(int64)
		if !ok {
			return nil, errors.New("not an integer")
		}
		out[i] = n
	}
	return out, nil
}
