package ratelimit

import (
	"fmt"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// NewRedisClient returns a client for RELAY_REDIS_URL fit for the request
// path: it honours context deadlines (so the limiter's timeout bounds every
// call), never retries (a retry would double the wait), and fails fast when
// no connection is free. redis://, rediss:// and unix:// URLs name one
// server; a redis:// URL with addr= parameters names a Redis Cluster
// (redis://host1:6379?addr=host2:6379&addr=host3:6379).
func NewRedisClient(rawURL string) (redis.UniversalClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse Redis URL: %w", err)
	}
	if u.Query().Has("addr") {
		opts, err := redis.ParseClusterURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("parse Redis Cluster URL: %w", err)
		}
		opts.ContextTimeoutEnabled = true
		opts.MaxRetries = -1
		opts.DialTimeout = time.Second
		opts.PoolTimeout = time.Second
		opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		return redis.NewClusterClient(opts), nil
	}
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse Redis URL: %w", err)
	}
	opts.ContextTimeoutEnabled = true
	opts.MaxRetries = -1
	opts.DialTimeout = time.Second
	opts.PoolTimeout = time.Second
	opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return redis.NewClient(opts), nil
}
