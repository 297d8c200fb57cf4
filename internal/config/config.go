// Package config reads Relay's settings from the environment, lets flags
// override them, and validates them at start: an invalid value is one clear
// error naming the variable. It holds no state beyond the returned Config.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/relay-llm/relay/internal/secret"
)

// Config is everything `relay serve` needs.
type Config struct {
	Port                  int           // RELAY_PORT: inference plane
	ControlPort           int           // RELAY_CONTROL_PORT: control plane
	BindAddress           string        // RELAY_BIND_ADDRESS: interface both planes listen on ("" = all)
	DatabaseURL           string        // RELAY_DATABASE_URL: empty = embedded Postgres under DataDir
	RedisURL              string        // RELAY_REDIS_URL: empty = in-process limiter
	MasterKey             []byte        // RELAY_MASTER_KEY: base64, 32 bytes
	PreviousKeys          [][]byte      // RELAY_MASTER_KEY_PREVIOUS: comma-separated older master keys, still accepted for opening
	AdminToken            string        // RELAY_ADMIN_TOKEN: bearer for the control API
	DataDir               string        // RELAY_DATA_DIR
	LogLevel              slog.Level    // RELAY_LOG_LEVEL: debug, info, warn, error
	LogFormat             string        // RELAY_LOG_FORMAT: json or text
	SnapshotDebounce      time.Duration // RELAY_SNAPSHOT_DEBOUNCE
	SnapshotResync        time.Duration // RELAY_SNAPSHOT_RESYNC
	MaxBodyBytes          int64         // RELAY_MAX_BODY_BYTES
	ShutdownTimeout       time.Duration // RELAY_SHUTDOWN_TIMEOUT: drain time for in-flight requests, then again for flushing
	DrainDelay            time.Duration // RELAY_DRAIN_DELAY: /readyz answers 503 this long before the listeners stop accepting
	IdleTimeout           time.Duration // RELAY_IDLE_TIMEOUT: an idle keep-alive connection is closed after this
	ReadHeaderTimeout     time.Duration // RELAY_READ_HEADER_TIMEOUT: a client must send its request headers within this
	BodyTimeout           time.Duration // RELAY_BODY_TIMEOUT: longest pause while a client sends its request body
	MaxConnections        int           // RELAY_MAX_CONNECTIONS: inference connections one pod holds at once
	ControlMaxConnections int           // RELAY_CONTROL_MAX_CONNECTIONS: control plane connections, a reserve of their own
	MigrateOnStart        bool          // RELAY_MIGRATE_ON_START: apply pending migrations at start (off when migrations are a deploy step)
	Demo                  bool          // RELAY_DEMO: seed a demo catalog into an empty database (default on for the embedded default)
	DemoSet               bool          // RELAY_DEMO was given
	MaxInflight           int           // RELAY_MAX_INFLIGHT: inference requests one pod serves at once, above which it answers 429 overloaded (0 = no cap)
	RedisTimeout          time.Duration // RELAY_REDIS_TIMEOUT: bound on each rate-limiter Redis call on the request path
	RedisPrefix           string        // RELAY_REDIS_PREFIX: prefix of every Redis key and channel Relay uses
	PayloadRetention      time.Duration // RELAY_PAYLOAD_RETENTION: how long payload captures are kept
	PayloadQueue          int           // RELAY_PAYLOAD_QUEUE: payload captures waiting to be written, beyond which they are dropped
}

// Load reads the environment through getenv, then flags from args. Errors
// name the variable (or flag) and the problem, on one line.
func Load(args []string, getenv func(string) string, stderr io.Writer) (*Config, error) {
	c := &Config{}
	var errs []error
	env := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}

	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.String("port", env("RELAY_PORT", "8080"), "inference plane port (RELAY_PORT)")
	controlPort := fs.String("control-port", env("RELAY_CONTROL_PORT", "8081"), "control plane port (RELAY_CONTROL_PORT)")
	bind := fs.String("bind", env("RELAY_BIND_ADDRESS", ""), "address both planes listen on (RELAY_BIND_ADDRESS)")
	dbURL := fs.String("database-url", env("RELAY_DATABASE_URL", ""), "Postgres URL; empty runs an embedded Postgres (RELAY_DATABASE_URL)")
	redisURL := fs.String("redis-url", env("RELAY_REDIS_URL", ""), "Redis URL; empty keeps limits in process (RELAY_REDIS_URL)")
	dataDir := fs.String("data-dir", env("RELAY_DATA_DIR", "./.relay"), "data directory (RELAY_DATA_DIR)")
	logLevel := fs.String("log-level", env("RELAY_LOG_LEVEL", "info"), "debug, info, warn or error (RELAY_LOG_LEVEL)")
	logFormat := fs.String("log-format", env("RELAY_LOG_FORMAT", "json"), "json or text (RELAY_LOG_FORMAT)")
	debounce := fs.String("snapshot-debounce", env("RELAY_SNAPSHOT_DEBOUNCE", "1s"), "quiet time before applying catalog changes (RELAY_SNAPSHOT_DEBOUNCE)")
	resync := fs.String("snapshot-resync", env("RELAY_SNAPSHOT_RESYNC", "5m"), "full snapshot reload interval (RELAY_SNAPSHOT_RESYNC)")
	maxBody := fs.String("max-body-bytes", env("RELAY_MAX_BODY_BYTES", "33554432"), "largest request body accepted (RELAY_MAX_BODY_BYTES)")
	shutdown := fs.String("shutdown-timeout", env("RELAY_SHUTDOWN_TIMEOUT", "30s"), "drain time for in-flight requests (RELAY_SHUTDOWN_TIMEOUT)")
	drainDelay := fs.String("drain-delay", env("RELAY_DRAIN_DELAY", "5s"), "on SIGTERM, how long /readyz answers 503 while still serving (RELAY_DRAIN_DELAY)")
	idleTimeout := fs.String("idle-timeout", env("RELAY_IDLE_TIMEOUT", "90s"), "close keep-alive connections idle this long (RELAY_IDLE_TIMEOUT)")
	headerTimeout := fs.String("read-header-timeout", env("RELAY_READ_HEADER_TIMEOUT", "10s"), "time a client has to send its request headers (RELAY_READ_HEADER_TIMEOUT)")
	bodyTimeout := fs.String("body-timeout", env("RELAY_BODY_TIMEOUT", "30s"), "longest pause while a client sends its request body (RELAY_BODY_TIMEOUT)")
	maxConns := fs.String("max-connections", env("RELAY_MAX_CONNECTIONS", "10000"), "inference connections held at once; more wait to be accepted (RELAY_MAX_CONNECTIONS)")
	controlMaxConns := fs.String("control-max-connections", env("RELAY_CONTROL_MAX_CONNECTIONS", "256"), "control plane connections held at once (RELAY_CONTROL_MAX_CONNECTIONS)")
	migrateOnStart := fs.String("migrate-on-start", env("RELAY_MIGRATE_ON_START", "true"), "apply pending migrations at start; false when they run as a deploy step (RELAY_MIGRATE_ON_START)")
	demo := fs.String("demo", env("RELAY_DEMO", ""), "seed a demo catalog into an empty database: true or false (RELAY_DEMO)")
	maxInflight := fs.String("max-inflight", env("RELAY_MAX_INFLIGHT", "0"), "inference requests served at once before answering 429; 0 = no cap (RELAY_MAX_INFLIGHT)")
	redisTimeout := fs.String("redis-timeout", env("RELAY_REDIS_TIMEOUT", "100ms"), "bound on each rate-limiter Redis call on the request path (RELAY_REDIS_TIMEOUT)")
	redisPrefix := fs.String("redis-prefix", env("RELAY_REDIS_PREFIX", "relay:"), "prefix of Relay's Redis keys (RELAY_REDIS_PREFIX)")
	payloadRetention := fs.String("payload-retention", env("RELAY_PAYLOAD_RETENTION", "168h"), "how long payload captures are kept (RELAY_PAYLOAD_RETENTION)")
	payloadQueue := fs.String("payload-queue", env("RELAY_PAYLOAD_QUEUE", "1024"), "payload captures waiting to be written before new ones are dropped (RELAY_PAYLOAD_QUEUE)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}

	c.Port = parsePort("RELAY_PORT", *port, &errs)
	c.ControlPort = parsePort("RELAY_CONTROL_PORT", *controlPort, &errs)
	if c.Port != 0 && c.Port == c.ControlPort {
		errs = append(errs, fmt.Errorf("RELAY_CONTROL_PORT: %d is also RELAY_PORT; the planes need two ports", c.ControlPort))
	}
	c.BindAddress = *bind
	c.DatabaseURL = *dbURL
	if c.DatabaseURL != "" {
		if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			errs = append(errs, errors.New("RELAY_DATABASE_URL: want postgres://user@host:port/db"))
		}
	}
	c.RedisURL = *redisURL
	if c.RedisURL != "" {
		if u, err := url.Parse(c.RedisURL); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix") {
			errs = append(errs, errors.New("RELAY_REDIS_URL: want redis://host:port/db"))
		}
	}
	if mk := getenv("RELAY_MASTER_KEY"); strings.TrimSpace(mk) != "" {
		k, err := secret.ParseKey(mk)
		if err != nil {
			errs = append(errs, fmt.Errorf("RELAY_MASTER_KEY: %v (generate one with: openssl rand -base64 32)", err))
		}
		c.MasterKey = k
	}
	if prev := strings.TrimSpace(getenv("RELAY_MASTER_KEY_PREVIOUS")); prev != "" {
		for _, p := range strings.Split(prev, ",") {
			k, err := secret.ParseKey(p)
			if err != nil {
				errs = append(errs, fmt.Errorf("RELAY_MASTER_KEY_PREVIOUS: %v", err))
				break
			}
			c.PreviousKeys = append(c.PreviousKeys, k)
		}
		if c.MasterKey == nil && len(errs) == 0 {
			errs = append(errs, errors.New("RELAY_MASTER_KEY_PREVIOUS: set RELAY_MASTER_KEY too; previous keys only open values"))
		}
	}
	c.AdminToken = strings.TrimSpace(getenv("RELAY_ADMIN_TOKEN"))
	if c.AdminToken != "" && len(c.AdminToken) < 16 {
		errs = append(errs, errors.New("RELAY_ADMIN_TOKEN: too short; use at least 16 characters"))
	}
	c.DataDir = *dataDir
	switch strings.ToLower(*logLevel) {
	case "debug":
		c.LogLevel = slog.LevelDebug
	case "info":
		c.LogLevel = slog.LevelInfo
	case "warn", "warning":
		c.LogLevel = slog.LevelWarn
	case "error":
		c.LogLevel = slog.LevelError
	default:
		errs = append(errs, fmt.Errorf("RELAY_LOG_LEVEL: %q is not one of debug, info, warn, error", *logLevel))
	}
	c.LogFormat = strings.ToLower(*logFormat)
	if c.LogFormat != "json" && c.LogFormat != "text" {
		errs = append(errs, fmt.Errorf("RELAY_LOG_FORMAT: %q is not json or text", *logFormat))
	}
	c.SnapshotDebounce = parseDuration("RELAY_SNAPSHOT_DEBOUNCE", *debounce, 0, time.Minute, &errs)
	c.SnapshotResync = parseDuration("RELAY_SNAPSHOT_RESYNC", *resync, time.Second, 24*time.Hour, &errs)
	c.ShutdownTimeout = parseDuration("RELAY_SHUTDOWN_TIMEOUT", *shutdown, 0, time.Hour, &errs)
	c.DrainDelay = parseDuration("RELAY_DRAIN_DELAY", *drainDelay, 0, 10*time.Minute, &errs)
	c.IdleTimeout = parseDuration("RELAY_IDLE_TIMEOUT", *idleTimeout, 100*time.Millisecond, 24*time.Hour, &errs)
	c.ReadHeaderTimeout = parseDuration("RELAY_READ_HEADER_TIMEOUT", *headerTimeout, 100*time.Millisecond, time.Hour, &errs)
	c.BodyTimeout = parseDuration("RELAY_BODY_TIMEOUT", *bodyTimeout, 100*time.Millisecond, time.Hour, &errs)
	c.MaxConnections = parseCount("RELAY_MAX_CONNECTIONS", *maxConns, 1, 1<<20, &errs)
	c.ControlMaxConnections = parseCount("RELAY_CONTROL_MAX_CONNECTIONS", *controlMaxConns, 1, 1<<16, &errs)
	if n, err := strconv.ParseInt(*maxBody, 10, 64); err != nil || n < 1024 {
		errs = append(errs, fmt.Errorf("RELAY_MAX_BODY_BYTES: %q is not a byte count of at least 1024", *maxBody))
	} else {
		c.MaxBodyBytes = n
	}
	if n, err := strconv.Atoi(*maxInflight); err != nil || n < 0 {
		errs = append(errs, fmt.Errorf("RELAY_MAX_INFLIGHT: %q is not a count of at least 0 (0 = no cap)", *maxInflight))
	} else {
		c.MaxInflight = n
	}
	c.RedisTimeout = parseDuration("RELAY_REDIS_TIMEOUT", *redisTimeout, time.Millisecond, 10*time.Second, &errs)
	c.RedisPrefix = *redisPrefix
	if strings.ContainsAny(c.RedisPrefix, "{} \t\n") {
		errs = append(errs, fmt.Errorf("RELAY_REDIS_PREFIX: %q may not hold braces or spaces (Relay adds its own hash tags)", c.RedisPrefix))
	}
	c.PayloadRetention = parseDuration("RELAY_PAYLOAD_RETENTION", *payloadRetention, time.Hour, 10*365*24*time.Hour, &errs)
	if n, err := strconv.Atoi(*payloadQueue); err != nil || n < 1 || n > 1<<20 {
		errs = append(errs, fmt.Errorf("RELAY_PAYLOAD_QUEUE: %q is not a count between 1 and 1048576", *payloadQueue))
	} else {
		c.PayloadQueue = n
	}
	if b, err := strconv.ParseBool(*migrateOnStart); err != nil {
		errs = append(errs, fmt.Errorf("RELAY_MIGRATE_ON_START: %q is not true or false", *migrateOnStart))
	} else {
		c.MigrateOnStart = b
	}
	if *demo != "" {
		b, err := strconv.ParseBool(*demo)
		if err != nil {
			errs = append(errs, fmt.Errorf("RELAY_DEMO: %q is not true or false", *demo))
		}
		c.Demo, c.DemoSet = b, true
	}
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return c, nil
}

func parsePort(name, v string, errs *[]error) int {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 65535 {
		*errs = append(*errs, fmt.Errorf("%s: %q is not a port number (0-65535)", name, v))
		return 0
	}
	return n
}

func parseCount(name, v string, lo, hi int, errs *[]error) int {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		*errs = append(*errs, fmt.Errorf("%s: %q is not a count between %d and %d", name, v, lo, hi))
		return 0
	}
	return n
}

func parseDuration(name, v string, lo, hi time.Duration, errs *[]error) time.Duration {
	d, err := time.ParseDuration(v)
	if err != nil || d < lo || d > hi {
		*errs = append(*errs, fmt.Errorf("%s: %q is not a duration between %s and %s (e.g. 1s, 500ms)", name, v, lo, hi))
		return 0
	}
	return d
}

// Logger builds the process logger from the configured level and format.
func (c *Config) Logger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.LogLevel}
	if c.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
