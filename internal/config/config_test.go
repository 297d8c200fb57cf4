package config

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// key is a valid master key: base64 of 32 bytes.
const key = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoad_Defaults(t *testing.T) {
	c, err := Load(nil, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 8080 || c.ControlPort != 8081 || c.DataDir != "./.relay" || c.LogFormat != "json" ||
		c.SnapshotDebounce != time.Second || c.DatabaseURL != "" || c.MasterKey != nil || !c.MigrateOnStart {
		t.Fatalf("unexpected defaults: %+v", c)
	}
}

func TestLoad_MigrateOnStartSwitchesOff(t *testing.T) {
	c, err := Load(nil, envOf(map[string]string{"RELAY_MIGRATE_ON_START": "false"}), io.Discard)
	if err != nil || c.MigrateOnStart {
		t.Fatalf("MigrateOnStart = %v, %v; want false", c != nil && c.MigrateOnStart, err)
	}
}

func TestLoad_FlagsOverrideEnvironment(t *testing.T) {
	c, err := Load([]string{"--port", "9000"}, envOf(map[string]string{"RELAY_PORT": "7000", "RELAY_CONTROL_PORT": "7001"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 9000 || c.ControlPort != 7001 {
		t.Fatalf("got ports %d %d", c.Port, c.ControlPort)
	}
}

func TestLoad_InvalidValuesNameTheVariable(t *testing.T) {
	cases := map[string]map[string]string{
		"RELAY_PORT":                    {"RELAY_PORT": "http"},
		"RELAY_CONTROL_PORT":            {"RELAY_CONTROL_PORT": "8080"},
		"RELAY_MASTER_KEY":              {"RELAY_MASTER_KEY": "c2hvcnQ="},
		"RELAY_MASTER_KEY_PREVIOUS":     {"RELAY_MASTER_KEY_PREVIOUS": "c2hvcnQ="},
		"RELAY_LOG_LEVEL":               {"RELAY_LOG_LEVEL": "loud"},
		"RELAY_LOG_FORMAT":              {"RELAY_LOG_FORMAT": "xml"},
		"RELAY_DATABASE_URL":            {"RELAY_DATABASE_URL": "mysql://x"},
		"RELAY_REDIS_URL":               {"RELAY_REDIS_URL": "http://x"},
		"RELAY_SNAPSHOT_DEBOUNCE":       {"RELAY_SNAPSHOT_DEBOUNCE": "soon"},
		"RELAY_ADMIN_TOKEN":             {"RELAY_ADMIN_TOKEN": "short"},
		"RELAY_MAX_BODY_BYTES":          {"RELAY_MAX_BODY_BYTES": "12"},
		"RELAY_DEMO":                    {"RELAY_DEMO": "maybe"},
		"RELAY_MIGRATE_ON_START":        {"RELAY_MIGRATE_ON_START": "later"},
		"RELAY_DRAIN_DELAY":             {"RELAY_DRAIN_DELAY": "-1s"},
		"RELAY_IDLE_TIMEOUT":            {"RELAY_IDLE_TIMEOUT": "0"},
		"RELAY_READ_HEADER_TIMEOUT":     {"RELAY_READ_HEADER_TIMEOUT": "never"},
		"RELAY_BODY_TIMEOUT":            {"RELAY_BODY_TIMEOUT": "1ms"},
		"RELAY_MAX_CONNECTIONS":         {"RELAY_MAX_CONNECTIONS": "0"},
		"RELAY_CONTROL_MAX_CONNECTIONS": {"RELAY_CONTROL_MAX_CONNECTIONS": "many"},
	}
	for name, env := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Load(nil, envOf(env), io.Discard)
			if err == nil || !strings.HasPrefix(err.Error(), name+":") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error = %v, want one line starting with %s:", err, name)
			}
		})
	}
}

func TestLoad_LimiterSettings(t *testing.T) {
	c, err := Load(nil, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxInflight != 0 || c.RedisTimeout != 100*time.Millisecond || c.RedisPrefix != "relay:" {
		t.Fatalf("defaults: max inflight %d, redis timeout %v, prefix %q", c.MaxInflight, c.RedisTimeout, c.RedisPrefix)
	}
	c, err = Load(nil, envOf(map[string]string{
		"RELAY_MAX_INFLIGHT": "512", "RELAY_REDIS_TIMEOUT": "50ms", "RELAY_REDIS_PREFIX": "prod:",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxInflight != 512 || c.RedisTimeout != 50*time.Millisecond || c.RedisPrefix != "prod:" {
		t.Fatalf("got %d %v %q", c.MaxInflight, c.RedisTimeout, c.RedisPrefix)
	}
	for name, env := range map[string]map[string]string{
		"RELAY_MAX_INFLIGHT":  {"RELAY_MAX_INFLIGHT": "-1"},
		"RELAY_REDIS_TIMEOUT": {"RELAY_REDIS_TIMEOUT": "0s"},
		"RELAY_REDIS_PREFIX":  {"RELAY_REDIS_PREFIX": "a{b}"},
	} {
		_, err := Load(nil, envOf(env), io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), name+":") {
			t.Errorf("%s: error = %v", name, err)
		}
	}
}

func TestLoad_ConnectionLimits(t *testing.T) {
	c, err := Load(nil, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.IdleTimeout != 90*time.Second || c.ReadHeaderTimeout != 10*time.Second || c.BodyTimeout != 30*time.Second ||
		c.MaxConnections != 10000 || c.ControlMaxConnections != 256 || c.DrainDelay != 5*time.Second {
		t.Fatalf("unexpected defaults: %+v", c)
	}
	c, err = Load(nil, envOf(map[string]string{
		"RELAY_IDLE_TIMEOUT": "2s", "RELAY_READ_HEADER_TIMEOUT": "3s", "RELAY_BODY_TIMEOUT": "4s",
		"RELAY_MAX_CONNECTIONS": "50", "RELAY_CONTROL_MAX_CONNECTIONS": "5", "RELAY_DRAIN_DELAY": "0",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.IdleTimeout != 2*time.Second || c.ReadHeaderTimeout != 3*time.Second || c.BodyTimeout != 4*time.Second ||
		c.MaxConnections != 50 || c.ControlMaxConnections != 5 || c.DrainDelay != 0 {
		t.Fatalf("settings not read: %+v", c)
	}
}

func TestLoad_ReportsEveryProblem(t *testing.T) {
	_, err := Load([]string{"--log-format", "xml"}, envOf(map[string]string{
		"RELAY_PORT": "http", "RELAY_ADMIN_TOKEN": "short", "RELAY_MAX_CONNECTIONS": "0",
	}), io.Discard)
	if err == nil {
		t.Fatal("no error")
	}
	lines := strings.Split(err.Error(), "\n")
	want := []string{"RELAY_PORT:", "RELAY_ADMIN_TOKEN:", "RELAY_LOG_FORMAT:", "RELAY_MAX_CONNECTIONS:"}
	if len(lines) != len(want) {
		t.Fatalf("error = %q, want one line for each of %v", err, want)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want it to start with %s", i, lines[i], w)
		}
	}
}

func TestLoad_SecretsAreNotFlags(t *testing.T) {
	for _, flag := range []string{"--master-key", "--admin-token", "--master-key-previous"} {
		if _, err := Load([]string{flag, "x"}, envOf(nil), io.Discard); err == nil {
			t.Errorf("%s accepted", flag)
		}
	}
}

func TestSettings_EachNamedOnce(t *testing.T) {
	envs, flags := map[string]bool{}, map[string]bool{}
	for _, s := range settings(&Config{}) {
		if !strings.HasPrefix(s.env, "RELAY_") || envs[s.env] || (s.flag != "" && flags[s.flag]) {
			t.Errorf("%s (--%s) is named twice or badly", s.env, s.flag)
		}
		if (s.flag == "") != (s.doc == "") {
			t.Errorf("%s: a flag wants a usage line, and only a flag", s.env)
		}
		envs[s.env], flags[s.flag] = true, true
	}
}

// The README's configuration table is the user's view of the settings: every
// setting has a row there, its default as the table says it, and every row
// for a RELAY_ variable is a setting or is read elsewhere (listed here).
func TestSettings_MatchTheREADME(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "\n## Configuration\n")
	section, _, _ = strings.Cut(section, "\n## ")
	rows := map[string]string{} // variable → default column
	for _, line := range strings.Split(section, "\n") {
		cols := strings.Split(line, " | ")
		if len(cols) < 3 || !strings.HasPrefix(cols[0], "| `") {
			continue
		}
		for _, v := range strings.Split(strings.TrimPrefix(cols[0], "| "), ", ") {
			rows[strings.Trim(v, "`")] = cols[1]
		}
	}
	if len(rows) < 10 {
		t.Fatalf("found %d rows in the README's configuration table; has it moved?", len(rows))
	}
	elsewhere := map[string]string{
		"RELAY_ADMIN_EMAIL":    "controlapi's bootstrap",
		"RELAY_ADMIN_PASSWORD": "controlapi's bootstrap",
		"RELAY_URL":            "the CLI (cmd/relay)",
	}
	for _, s := range settings(&Config{}) {
		col, ok := rows[s.env]
		if !ok {
			t.Errorf("%s has no row in the README", s.env)
			continue
		}
		delete(rows, s.env)
		quoted := strings.HasPrefix(col, "`")
		if s.def != "" && !strings.HasPrefix(col, "`"+s.def+"`") || s.def == "" && quoted {
			t.Errorf("%s: the README gives the default %s, the code %q", s.env, col, s.def)
		}
	}
	for v := range rows {
		if strings.HasPrefix(v, "RELAY_") && elsewhere[v] == "" {
			t.Errorf("the README documents %s, which nothing reads", v)
		}
	}
}

// The messages are what an operator reads at start; they stay word for word.
func TestLoad_Messages(t *testing.T) {
	for env, want := range map[string]string{
		"RELAY_PORT=http":                  `RELAY_PORT: "http" is not a port number (0-65535)`,
		"RELAY_MAX_CONNECTIONS=0":          `RELAY_MAX_CONNECTIONS: "0" is not a count between 1 and 1048576`,
		"RELAY_MAX_INFLIGHT=-1":            `RELAY_MAX_INFLIGHT: "-1" is not a count of at least 0 (0 = no cap)`,
		"RELAY_MAX_BODY_BYTES=12":          `RELAY_MAX_BODY_BYTES: "12" is not a byte count of at least 1024`,
		"RELAY_REDIS_TIMEOUT=0s":           `RELAY_REDIS_TIMEOUT: "0s" is not a duration between 1ms and 10s (e.g. 1s, 500ms)`,
		"RELAY_DEMO=maybe":                 `RELAY_DEMO: "maybe" is not true or false`,
		"RELAY_LOG_LEVEL=loud":             `RELAY_LOG_LEVEL: "loud" is not one of debug, info, warn, error`,
		"RELAY_DATABASE_URL=mysql://x":     `RELAY_DATABASE_URL: want postgres://user@host:port/db`,
		"RELAY_CONTROL_PORT=8080":          `RELAY_CONTROL_PORT: 8080 is also RELAY_PORT; the planes need two ports`,
		"RELAY_MASTER_KEY_PREVIOUS=" + key: `RELAY_MASTER_KEY_PREVIOUS: set RELAY_MASTER_KEY too; previous keys only open values`,
	} {
		name, value, _ := strings.Cut(env, "=")
		if _, err := Load(nil, envOf(map[string]string{name: value}), io.Discard); err == nil || err.Error() != want {
			t.Errorf("%s: error = %v, want %s", env, err, want)
		}
	}
}

func TestUnknownVariables_NameTheNearestKnownOne(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin", "RELAY_PORT=8080", "RELAY_ADMIN_EMAIL=a@b", "RELAY_TEST_DATABASE_URL=x", "RELAY_BENCH_EVENTS=1", "RELAY_SECRET_OPENAI=sk-x",
		"RELAY_REDIS_ADDR=relay-redis:6379", "RELAY_STORAGE_DRIVER=redis", "RELAY_CONTROL_API_PORT=9090",
		"RELAY_MASTERKEY=x", "RELAY_LOG_LEVLE=debug", "RELAY_TLS_CERT=/c", "RELAY_ZZZZZZZZ=1", "RELAY_METRICS_TOKEN=" + key,
	}
	want := map[string]string{
		"RELAY_REDIS_ADDR":       "RELAY_REDIS_URL",
		"RELAY_STORAGE_DRIVER":   "RELAY_DATABASE_URL",
		"RELAY_CONTROL_API_PORT": "RELAY_CONTROL_PORT",
		"RELAY_MASTERKEY":        "RELAY_MASTER_KEY",
		"RELAY_LOG_LEVLE":        "RELAY_LOG_LEVEL",
		"RELAY_TLS_CERT":         "RELAY_TLS_CERT_FILE",
		"RELAY_ZZZZZZZZ":         "",
	}
	got := map[string]string{}
	for _, u := range UnknownVariables(environ) {
		got[u.Name] = u.Nearest
	}
	if len(got) != len(want) {
		t.Errorf("unknown: %v, want %v", got, want)
	}
	for name, near := range want {
		if g, ok := got[name]; !ok || g != near {
			t.Errorf("%s: nearest %q (listed %v), want %q", name, g, ok, near)
		}
	}
}

func TestLoad_TLSAndProxySettings(t *testing.T) {
	c, err := Load(nil, envOf(map[string]string{
		"RELAY_TLS_CERT_FILE": "/etc/relay/tls.crt", "RELAY_TLS_KEY_FILE": "/etc/relay/tls.key",
		"RELAY_TRUSTED_PROXIES": "10.0.0.0/8, 192.168.1.7,::1", "RELAY_METRICS_TOKEN": "0123456789abcdef",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.TLSCertFile != "/etc/relay/tls.crt" || c.TLSKeyFile != "/etc/relay/tls.key" || c.MetricsToken != "0123456789abcdef" {
		t.Errorf("got %+v", c)
	}
	var nets []string
	for _, p := range c.TrustedProxies {
		nets = append(nets, p.String())
	}
	if strings.Join(nets, " ") != "10.0.0.0/8 192.168.1.7/32 ::1/128" {
		t.Errorf("trusted proxies %v", nets)
	}
	for name, env := range map[string]map[string]string{
		"cert without key": {"RELAY_TLS_CERT_FILE": "/c"},
		"key without cert": {"RELAY_TLS_KEY_FILE": "/k"},
		"not a CIDR":       {"RELAY_TRUSTED_PROXIES": "10.0.0.0/33"},
		"a host name":      {"RELAY_TRUSTED_PROXIES": "proxy.internal"},
		"short token":      {"RELAY_METRICS_TOKEN": "short"},
	} {
		if _, err := Load(nil, envOf(env), io.Discard); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
}
