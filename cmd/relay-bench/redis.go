package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisCPU reads a Redis server's own CPU time (INFO cpu: used_cpu_sys plus
// used_cpu_user, main process and its threads), so a run can say what the
// limiter costs Redis per request. A nil *redisCPU reads nothing.
type redisCPU struct {
	c *redis.Client
}

func newRedisCPU(url string) (*redisCPU, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("-redis-limit: %w", err)
	}
	r := &redisCPU{c: redis.NewClient(opts)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if r.used(ctx) < 0 {
		r.close()
		return nil, fmt.Errorf("-redis-limit: cannot read INFO cpu from %s", url)
	}
	return r, nil
}

// used is the server's CPU time so far; -1 when it cannot be read.
func (r *redisCPU) used(ctx context.Context) time.Duration {
	if r == nil {
		return -1
	}
	info, err := r.c.Info(ctx, "cpu").Result()
	if err != nil {
		return -1
	}
	return parseRedisCPU(info)
}

// parseRedisCPU sums used_cpu_sys and used_cpu_user (seconds) from an INFO
// cpu answer; -1 when either is missing.
func parseRedisCPU(info string) time.Duration {
	var total float64
	found := 0
	for line := range strings.Lines(info) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (k != "used_cpu_sys" && k != "used_cpu_user") {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return -1
		}
		total += f
		found++
	}
	if found != 2 {
		return -1
	}
	return time.Duration(total * float64(time.Second))
}

func (r *redisCPU) close() { r.c.Close() }
