// Package config reads Relay's settings from the environment, lets flags
// override them, and validates them at start: an invalid value is one clear
// error naming the variable. It holds no state beyond the returned Config.
package config

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"net/url"
	"slices"
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
	LongContextTokens     int           // RELAY_LONG_CONTEXT_TOKENS: input estimate past which tokens count RELAY_LONG_CONTEXT_WEIGHT times; 0 = off
	LongContextWeight     float64       // RELAY_LONG_CONTEXT_WEIGHT: weight of input tokens past RELAY_LONG_CONTEXT_TOKENS in rate-limit estimates
	RedisPrefix           string        // RELAY_REDIS_PREFIX: prefix of every Redis key and channel Relay uses
	PayloadRetention      time.Duration // RELAY_PAYLOAD_RETENTION: how long payload captures are kept
	PayloadQueue          int           // RELAY_PAYLOAD_QUEUE: payload captures waiting to be written, beyond which they are dropped
	ResponsesTTL          time.Duration // RELAY_RESPONSES_TTL: how long a stored Responses response is kept
	ResponsesMaxBytes     int64         // RELAY_RESPONSES_MAX_BYTES: the most one stored response's state may hold
	ResponsesProjectBytes int64         // RELAY_RESPONSES_PROJECT_MAX_BYTES: the most one project's stored responses may hold
	BodyDeadline          time.Duration // RELAY_BODY_DEADLINE: longest time a client may take to send a whole request body
	MaxHeaderBytes        int           // RELAY_MAX_HEADER_BYTES: request line and header fields on the inference plane, in bytes
	MaxHeaders            int           // RELAY_MAX_HEADERS: header fields of an inference request, Host included
	UsageDetailSample     float64       // RELAY_USAGE_DETAIL_SAMPLE: fraction of plain routed successes whose routing decision the ledger keeps in full
	UsageTransactions     int           // RELAY_USAGE_TRANSACTIONS: usage batches a pod may have in Postgres at once
	UsageSink             string        // RELAY_USAGE_SINK: postgres (the pod writes the ledger) or jetstream (the pod publishes; relay usage-consume writes)
	NATSURL               string        // RELAY_NATS_URL: NATS server(s) of the jetstream usage sink
	UsageStream           string        // RELAY_USAGE_STREAM: the JetStream stream usage events go through
	UsageStreamReplicas   int           // RELAY_USAGE_STREAM_REPLICAS: replicas of that stream (3 in a NATS cluster)
	UsageAckWait          time.Duration // RELAY_USAGE_ACK_WAIT: how long a consumer's batch waits for its acknowledgement before another consumer gets it
	UsageShardURLs        []string      // RELAY_USAGE_SHARD_URLS: relay usage-consume's ledgers, one per shard, events by project

	// TLS and what is believed of a proxy in front (internal/server).
	TLSCertFile    string         // RELAY_TLS_CERT_FILE: PEM certificate (chain) both planes serve; with TLSKeyFile turns TLS on
	TLSKeyFile     string         // RELAY_TLS_KEY_FILE: PEM private key of TLSCertFile
	TrustedProxies []netip.Prefix // RELAY_TRUSTED_PROXIES: peers whose X-Forwarded-For/-Proto are believed
	MetricsToken   string         // RELAY_METRICS_TOKEN: bearer /metrics requires ("" = open)

	// Breakers (internal/keypool).
	BreakerServerFailures  int           // RELAY_BREAKER_SERVER_FAILURES: server errors (5xx, 529, 408) in a row that open a breaker
	BreakerNetworkFailures int           // RELAY_BREAKER_NETWORK_FAILURES: network failures (connect, reset, timeout, a broken stream) in a row that open a breaker
	BreakerAuthWindow      time.Duration // RELAY_BREAKER_AUTH_WINDOW: a 401/403 on a second model of a host key within this holds the key itself
	SecretEnvPrefixes      []string      // RELAY_SECRET_ENV_PREFIXES: the variables env: host keys may name (prefixes ending in "_", or exact names)
	UpstreamAllow          []string      // RELAY_UPSTREAM_ALLOW: hosts and CIDRs a host's base URL may name; empty = any but Relay's own and metadata addresses
	UpstreamHTTP2          bool          // RELAY_UPSTREAM_HTTP2: TLS upstreams through net/http, HTTP/2 where offered, instead of Relay's HTTP/1.1 client
	AdminTokenFile         string        // RELAY_ADMIN_TOKEN_FILE: file holding the admin token, re-read when it changes
	AdminTokenExpires      time.Time     // RELAY_ADMIN_TOKEN_EXPIRES: RFC 3339 time after which RELAY_ADMIN_TOKEN is refused (zero = never)
	AdminTokenGrace        time.Duration // RELAY_ADMIN_TOKEN_GRACE: how long the previous token of RELAY_ADMIN_TOKEN_FILE is still accepted
}

// setting is one of Relay's settings: the variable it is read from, the
// flag that overrides it, its default and how its text becomes a field of
// Config. The README's configuration table lists the same variables with
// the same defaults (a test holds them together).
type setting struct {
	env   string // RELAY_… variable
	flag  string // flag of relay serve; "" keeps a secret off the command line
	def   string // default, as the variable would spell it
	doc   string // flag usage
	parse func(v string) error
}

// settings is the table Load reads, each entry parsing into its field of c.
// An error names no variable: Load puts the name in front.
func settings(c *Config) []setting {
	return []setting{
		{"RELAY_PORT", "port", "8080", "inference plane port", port(&c.Port)},
		{"RELAY_CONTROL_PORT", "control-port", "8081", "control plane port", port(&c.ControlPort)},
		{"RELAY_BIND_ADDRESS", "bind", "", "address both planes listen on", text(&c.BindAddress)},
		{"RELAY_DATABASE_URL", "database-url", "", "Postgres URL; empty runs an embedded Postgres",
			urlOf(&c.DatabaseURL, "want postgres://user@host:port/db", "postgres", "postgresql")},
		{"RELAY_REDIS_URL", "redis-url", "", "Redis URL; empty keeps limits in process",
			urlOf(&c.RedisURL, "want redis://host:port/db", "redis", "rediss", "unix")},
		{"RELAY_MASTER_KEY", "", "", "", masterKey(&c.MasterKey)},
		{"RELAY_MASTER_KEY_PREVIOUS", "", "", "", previousKeys(&c.PreviousKeys)},
		{"RELAY_ADMIN_TOKEN", "", "", "", adminToken(&c.AdminToken)},
		{"RELAY_DATA_DIR", "data-dir", "./.relay", "data directory", text(&c.DataDir)},
		{"RELAY_LOG_LEVEL", "log-level", "info", "debug, info, warn or error", logLevel(&c.LogLevel)},
		{"RELAY_LOG_FORMAT", "log-format", "json", "json or text", logFormat(&c.LogFormat)},
		{"RELAY_SNAPSHOT_DEBOUNCE", "snapshot-debounce", "1s", "quiet time before applying catalog changes",
			duration(&c.SnapshotDebounce, 0, time.Minute)},
		{"RELAY_SNAPSHOT_RESYNC", "snapshot-resync", "5m", "full snapshot reload interval",
			duration(&c.SnapshotResync, time.Second, 24*time.Hour)},
		{"RELAY_MAX_BODY_BYTES", "max-body-bytes", "33554432", "largest request body accepted",
			valid(&c.MaxBodyBytes, int64Of, atLeast[int64](1024), "a byte count of at least 1024")},
		{"RELAY_SHUTDOWN_TIMEOUT", "shutdown-timeout", "30s", "drain time for in-flight requests",
			duration(&c.ShutdownTimeout, 0, time.Hour)},
		{"RELAY_DRAIN_DELAY", "drain-delay", "5s", "on SIGTERM, how long /readyz answers 503 while still serving",
			duration(&c.DrainDelay, 0, 10*time.Minute)},
		{"RELAY_IDLE_TIMEOUT", "idle-timeout", "90s", "close keep-alive connections idle this long",
			duration(&c.IdleTimeout, 100*time.Millisecond, 24*time.Hour)},
		{"RELAY_READ_HEADER_TIMEOUT", "read-header-timeout", "10s", "time a client has to send its request headers",
			duration(&c.ReadHeaderTimeout, 100*time.Millisecond, time.Hour)},
		{"RELAY_BODY_TIMEOUT", "body-timeout", "30s", "longest pause while a client sends its request body",
			duration(&c.BodyTimeout, 100*time.Millisecond, time.Hour)},
		{"RELAY_BODY_DEADLINE", "body-deadline", "5m", "longest time a client may take to send a whole request body",
			duration(&c.BodyDeadline, time.Second, 24*time.Hour)},
		{"RELAY_MAX_HEADER_BYTES", "max-header-bytes", "65536", "request line and header fields of an inference request, in bytes",
			count(&c.MaxHeaderBytes, 4096, 16<<20)},
		{"RELAY_MAX_HEADERS", "max-headers", "100", "header fields of an inference request, Host included",
			count(&c.MaxHeaders, 8, 10000)},
		{"RELAY_MAX_CONNECTIONS", "max-connections", "10000", "inference connections held at once; more wait to be accepted",
			count(&c.MaxConnections, 1, 1<<20)},
		{"RELAY_CONTROL_MAX_CONNECTIONS", "control-max-connections", "256", "control plane connections held at once",
			count(&c.ControlMaxConnections, 1, 1<<16)},
		{"RELAY_MIGRATE_ON_START", "migrate-on-start", "true", "apply pending migrations at start; false when they run as a deploy step",
			boolean(&c.MigrateOnStart)},
		{"RELAY_DEMO", "demo", "", "seed a demo catalog into an empty database: true or false", optionalBool(&c.Demo, &c.DemoSet)},
		{"RELAY_MAX_INFLIGHT", "max-inflight", "0", "inference requests served at once before answering 429; 0 = no cap",
			valid(&c.MaxInflight, strconv.Atoi, atLeast(0), "a count of at least 0 (0 = no cap)")},
		{"RELAY_REDIS_TIMEOUT", "redis-timeout", "100ms", "bound on each rate-limiter Redis call on the request path",
			duration(&c.RedisTimeout, time.Millisecond, 10*time.Second)},
		{"RELAY_LONG_CONTEXT_TOKENS", "long-context-tokens", "0", "input tokens of a request's rate-limit estimate past which each counts RELAY_LONG_CONTEXT_WEIGHT times; 0 = off",
			count(&c.LongContextTokens, 0, 1<<30)},
		{"RELAY_LONG_CONTEXT_WEIGHT", "long-context-weight", "1", "weight (1 to 10) of input tokens past RELAY_LONG_CONTEXT_TOKENS in rate-limit estimates",
			valid(&c.LongContextWeight, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) }, between(1.0, 10.0), "a weight from 1 to 10")},
		{"RELAY_REDIS_PREFIX", "redis-prefix", "relay:", "prefix of Relay's Redis keys", redisPrefix(&c.RedisPrefix)},
		{"RELAY_PAYLOAD_RETENTION", "payload-retention", "168h", "how long payload captures are kept",
			duration(&c.PayloadRetention, time.Hour, 10*365*24*time.Hour)},
		{"RELAY_PAYLOAD_QUEUE", "payload-queue", "1024", "payload captures waiting to be written before new ones are dropped",
			count(&c.PayloadQueue, 1, 1<<20)},
		{"RELAY_RESPONSES_TTL", "responses-ttl", "720h", "how long a stored Responses response is kept",
			duration(&c.ResponsesTTL, time.Minute, 10*365*24*time.Hour)},
		{"RELAY_RESPONSES_MAX_BYTES", "responses-max-bytes", "4194304", "the most one stored response's state (its input and output items) may hold",
			valid(&c.ResponsesMaxBytes, int64Of, atLeast[int64](1024), "a byte count of at least 1024")},
		{"RELAY_RESPONSES_PROJECT_MAX_BYTES", "responses-project-max-bytes", "268435456", "the most one project's stored responses may hold; the oldest go first",
			valid(&c.ResponsesProjectBytes, int64Of, atLeast[int64](1024), "a byte count of at least 1024")},
		{"RELAY_USAGE_DETAIL_SAMPLE", "usage-detail-sample", "0.01", "fraction (0 to 1) of plain routed successes whose routing decision is stored in full",
			valid(&c.UsageDetailSample, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) }, between(0.0, 1.0), "a fraction from 0 to 1")},
		{"RELAY_USAGE_TRANSACTIONS", "usage-transactions", "2", "usage batches a pod may have in Postgres at once, each in its own transaction",
			count(&c.UsageTransactions, 1, 64)},
		{"RELAY_USAGE_SINK", "usage-sink", "postgres", "where pods send usage events: postgres or jetstream", usageSink(&c.UsageSink)},
		{"RELAY_NATS_URL", "nats-url", "", "NATS server URL(s), comma-separated, of the jetstream usage sink",
			urlOf(&c.NATSURL, "want nats://host:port", "nats", "tls")},
		{"RELAY_USAGE_STREAM", "usage-stream", "RELAY_USAGE", "the JetStream stream of usage events", streamName(&c.UsageStream)},
		{"RELAY_USAGE_STREAM_REPLICAS", "usage-stream-replicas", "1", "replicas of the usage stream", count(&c.UsageStreamReplicas, 1, 5)},
		{"RELAY_USAGE_ACK_WAIT", "usage-ack-wait", "1m", "relay usage-consume: how long a batch waits for its acknowledgement before another consumer gets it (a consumer killed mid-batch)",
			duration(&c.UsageAckWait, time.Second, time.Hour)},
		{"RELAY_USAGE_SHARD_URLS", "usage-shard-urls", "", "relay usage-consume: comma-separated Postgres URLs of the ledger's shards (a project's events go to one of them); unset: RELAY_DATABASE_URL alone",
			urlsOf(&c.UsageShardURLs, "want postgres://user@host:port/db, comma-separated", "postgres", "postgresql")},
		{"RELAY_TLS_CERT_FILE", "tls-cert-file", "", "PEM certificate both planes serve over TLS (re-read when it changes)", text(&c.TLSCertFile)},
		{"RELAY_TLS_KEY_FILE", "tls-key-file", "", "PEM private key of the TLS certificate", text(&c.TLSKeyFile)},
		{"RELAY_TRUSTED_PROXIES", "trusted-proxies", "", "comma-separated CIDRs whose X-Forwarded-For/-Proto are believed",
			prefixes(&c.TrustedProxies)},
		{"RELAY_METRICS_TOKEN", "", "", "", adminToken(&c.MetricsToken)}, // the admin token's rule: empty or ≥ 16 characters
		{"RELAY_BREAKER_SERVER_FAILURES", "breaker-server-failures", "5", "server errors (5xx, 529, 408) in a row that open a breaker",
			count(&c.BreakerServerFailures, 1, 1000)},
		{"RELAY_BREAKER_NETWORK_FAILURES", "breaker-network-failures", "5", "network failures in a row that open a breaker",
			count(&c.BreakerNetworkFailures, 1, 1000)},
		{"RELAY_BREAKER_AUTH_WINDOW", "breaker-auth-window", "1m", "a 401/403 on a second model of a host key within this holds the key",
			duration(&c.BreakerAuthWindow, time.Second, 24*time.Hour)},
		{"RELAY_SECRET_ENV_PREFIXES", "", secret.DefaultEnvPrefixes, "", list(&c.SecretEnvPrefixes)},
		{"RELAY_UPSTREAM_ALLOW", "", "", "", list(&c.UpstreamAllow)},
		{"RELAY_UPSTREAM_HTTP2", "", "false", "", boolean(&c.UpstreamHTTP2)},
		{"RELAY_ADMIN_TOKEN_FILE", "", "", "", text(&c.AdminTokenFile)},
		{"RELAY_ADMIN_TOKEN_EXPIRES", "", "", "", timestamp(&c.AdminTokenExpires)},
		{"RELAY_ADMIN_TOKEN_GRACE", "", "10m", "", duration(&c.AdminTokenGrace, 0, 7*24*time.Hour)},
	}
}

// Names lists every variable the settings table reads: Relay's own
// settings, which no host key may name (secret.EnvRefs).
func Names() []string {
	t := settings(&Config{})
	out := make([]string, len(t))
	for i, s := range t {
		out[i] = s.env
	}
	return out
}

// Load reads the environment through getenv, then flags from args. Each
// problem is one line naming the variable; all of them are returned, joined.
func Load(args []string, getenv func(string) string, stderr io.Writer) (*Config, error) {
	c := &Config{}
	table := settings(c)
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	values := make([]*string, len(table))
	for i, s := range table {
		v := strings.TrimSpace(getenv(s.env))
		if v == "" {
			v = s.def
		}
		values[i] = &v
		if s.flag != "" {
			fs.StringVar(values[i], s.flag, v, s.doc+" ("+s.env+")")
		}
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var errs []error
	for i, s := range table {
		if err := s.parse(*values[i]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.env, err))
		}
	}
	if len(errs) == 0 { // the checks across settings read only what parsed
		errs = c.check()
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// check finds the problems no single setting shows.
func (c *Config) check() []error {
	var errs []error
	if c.Port != 0 && c.Port == c.ControlPort {
		errs = append(errs, fmt.Errorf("RELAY_CONTROL_PORT: %d is also RELAY_PORT; the planes need two ports", c.ControlPort))
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		errs = append(errs, errors.New("RELAY_TLS_CERT_FILE, RELAY_TLS_KEY_FILE: set both or neither"))
	}
	if c.AdminToken != "" && c.AdminTokenFile != "" {
		errs = append(errs, errors.New("RELAY_ADMIN_TOKEN_FILE: set it or RELAY_ADMIN_TOKEN, not both"))
	}
	if !c.AdminTokenExpires.IsZero() && c.AdminToken == "" {
		errs = append(errs, errors.New("RELAY_ADMIN_TOKEN_EXPIRES: it applies to RELAY_ADMIN_TOKEN, which is not set (a token file gives its own expiry on its second line)"))
	}
	if c.UsageSink == "jetstream" && c.NATSURL == "" {
		errs = append(errs, errors.New("RELAY_NATS_URL: RELAY_USAGE_SINK=jetstream needs the NATS server"))
	}
	if c.PreviousKeys != nil && c.MasterKey == nil {
		errs = append(errs, errors.New("RELAY_MASTER_KEY_PREVIOUS: set RELAY_MASTER_KEY too; previous keys only open values"))
	}
	return errs
}

func usageSink(dst *string) func(string) error {
	return func(v string) error {
		switch v = strings.ToLower(v); v {
		case "postgres", "jetstream":
			*dst = v
			return nil
		}
		return fmt.Errorf("%q is not postgres or jetstream", v)
	}
}

// streamName is a JetStream stream name: letters, digits, - and _.
func streamName(dst *string) func(string) error {
	return func(v string) error {
		for _, r := range v {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return fmt.Errorf("%q is not a stream name (letters, digits, - and _)", v)
			}
		}
		if v == "" {
			return errors.New("a stream name is required")
		}
		*dst = v
		return nil
	}
}

func text(dst *string) func(string) error {
	return func(v string) error { *dst = v; return nil }
}

// valid returns a parser that parses v with parse and keeps the value in
// *dst when ok holds; otherwise its error says v is not want.
func valid[T any](dst *T, parse func(string) (T, error), ok func(T) bool, want string) func(string) error {
	return func(v string) error {
		x, err := parse(v)
		if err != nil || !ok(x) {
			return fmt.Errorf("%q is not %s", v, want)
		}
		*dst = x
		return nil
	}
}

func between[T cmp.Ordered](lo, hi T) func(T) bool {
	return func(x T) bool { return lo <= x && x <= hi }
}

func atLeast[T cmp.Ordered](lo T) func(T) bool {
	return func(x T) bool { return lo <= x }
}

func port(dst *int) func(string) error {
	return valid(dst, strconv.Atoi, between(0, 65535), "a port number (0-65535)")
}

func count(dst *int, lo, hi int) func(string) error {
	return valid(dst, strconv.Atoi, between(lo, hi), fmt.Sprintf("a count between %d and %d", lo, hi))
}

func duration(dst *time.Duration, lo, hi time.Duration) func(string) error {
	return valid(dst, time.ParseDuration, between(lo, hi), fmt.Sprintf("a duration between %s and %s (e.g. 1s, 500ms)", lo, hi))
}

func boolean(dst *bool) func(string) error {
	return valid(dst, strconv.ParseBool, func(bool) bool { return true }, "true or false")
}

func int64Of(v string) (int64, error) { return strconv.ParseInt(v, 10, 64) }

// optionalBool leaves *set false when the setting is not given, so the
// caller can pick a default of its own.
func optionalBool(dst, set *bool) func(string) error {
	return func(v string) error {
		if v == "" {
			return nil
		}
		*set = true
		return boolean(dst)(v)
	}
}

// urlOf accepts an empty value (the setting is off) or a URL in one of the
// schemes.
func urlOf(dst *string, want string, schemes ...string) func(string) error {
	return func(v string) error {
		*dst = v
		if v == "" {
			return nil
		}
		if u, err := url.Parse(v); err != nil || !slices.Contains(schemes, u.Scheme) {
			return errors.New(want)
		}
		return nil
	}
}

// urlsOf is urlOf for a comma-separated list.
func urlsOf(dst *[]string, want string, schemes ...string) func(string) error {
	return func(v string) error {
		*dst = nil
		for _, e := range strings.Split(v, ",") {
			var u string
			if err := urlOf(&u, want, schemes...)(strings.TrimSpace(e)); err != nil {
				return err
			}
			if u != "" {
				*dst = append(*dst, u)
			}
		}
		return nil
	}
}

func logLevel(dst *slog.Level) func(string) error {
	return func(v string) error {
		switch strings.ToLower(v) {
		case "debug":
			*dst = slog.LevelDebug
		case "info":
			*dst = slog.LevelInfo
		case "warn", "warning":
			*dst = slog.LevelWarn
		case "error":
			*dst = slog.LevelError
		default:
			return fmt.Errorf("%q is not one of debug, info, warn, error", v)
		}
		return nil
	}
}

func logFormat(dst *string) func(string) error {
	return func(v string) error {
		*dst = strings.ToLower(v)
		if *dst != "json" && *dst != "text" {
			return fmt.Errorf("%q is not json or text", v)
		}
		return nil
	}
}

func redisPrefix(dst *string) func(string) error {
	return func(v string) error {
		*dst = v
		if strings.ContainsAny(v, "{} \t\n") {
			return fmt.Errorf("%q may not hold braces or spaces (Relay adds its own hash tags)", v)
		}
		return nil
	}
}

func masterKey(dst *[]byte) func(string) error {
	return func(v string) error {
		if v == "" {
			return nil
		}
		k, err := secret.ParseKey(v)
		if err != nil {
			return fmt.Errorf("%v (generate one with: openssl rand -base64 32)", err)
		}
		*dst = k
		return nil
	}
}

func previousKeys(dst *[][]byte) func(string) error {
	return func(v string) error {
		if v == "" {
			return nil
		}
		for _, p := range strings.Split(v, ",") {
			k, err := secret.ParseKey(p)
			if err != nil {
				return err
			}
			*dst = append(*dst, k)
		}
		return nil
	}
}

// prefixes reads comma-separated CIDRs; a bare address is its own /32 or /128.
func prefixes(dst *[]netip.Prefix) func(string) error {
	return func(v string) error {
		*dst = nil
		for _, f := range strings.Split(v, ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			p, err := netip.ParsePrefix(f)
			if err != nil {
				a, aerr := netip.ParseAddr(f)
				if aerr != nil {
					return fmt.Errorf("%q is not a CIDR (10.0.0.0/8) or an address", f)
				}
				p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
			}
			*dst = append(*dst, p.Masked())
		}
		return nil
	}
}

// list splits a comma-separated value, dropping empty entries.
func list(dst *[]string) func(string) error {
	return func(v string) error {
		*dst = nil
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				*dst = append(*dst, e)
			}
		}
		return nil
	}
}

func timestamp(dst *time.Time) func(string) error {
	return func(v string) error {
		if v == "" {
			return nil
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return fmt.Errorf("%q is not an RFC 3339 time (e.g. 2027-01-31T00:00:00Z)", v)
		}
		*dst = t
		return nil
	}
}

func adminToken(dst *string) func(string) error {
	return func(v string) error {
		*dst = v
		if v != "" && len(v) < 16 {
			return errors.New("too short; use at least 16 characters")
		}
		return nil
	}
}

// Logger builds the process logger from the configured level and format.
func (c *Config) Logger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.LogLevel}
	if c.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
