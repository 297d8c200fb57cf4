package clienttest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/wire"
)

// nodeDir holds package.json, the lock file and the scripts.
const nodeDir = "testdata/node"

var (
	installOnce sync.Once
	installDir  string // the cache directory holding node_modules
	installErr  error
	installOut  []byte
)

// install runs `npm ci` once per lock file into a directory under the
// system temp dir named by the hash of package.json and the lock file, and
// returns that directory. Without node or npm, or when npm ci fails (the
// registry unreachable), it skips — unless CI is set, where it fails.
func install(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			unavailable(t, tool+" is not on PATH")
		}
	}
	installOnce.Do(func() { installDir, installOut, installErr = npmCI() })
	if installErr != nil {
		unavailable(t, fmt.Sprintf("npm ci: %v\n%s", installErr, installOut))
	}
	return installDir
}

// unavailable skips loudly, or fails on CI.
func unavailable(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("real clients cannot run on CI: %s", why)
	}
	t.Skipf("SKIPPING the real-client tests (they run on CI): %s", why)
}

func npmCI() (string, []byte, error) {
	h := sha256.New()
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(nodeDir, f))
		if err != nil {
			return "", nil, err
		}
		h.Write(b)
	}
	dir := filepath.Join(os.TempDir(), "relay-clienttest-npm-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".relay-installed")); err == nil {
		return dir, nil, nil
	}
	// Install beside the final place and rename, so a half-finished
	// install is never taken for a cached one.
	tmp, err := os.MkdirTemp(os.TempDir(), "relay-clienttest-npm-partial-")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(tmp)
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, _ := os.ReadFile(filepath.Join(nodeDir, f))
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			return "", nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--prefer-offline")
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", out, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "node_modules", ".relay-installed"), nil, 0o644); err != nil {
		return "", out, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process installed the same lock file first.
		if _, statErr := os.Stat(filepath.Join(dir, "node_modules", ".relay-installed")); statErr != nil {
			return "", out, err
		}
	}
	return dir, out, nil
}

// workDir returns a fresh directory holding the scripts of testdata/node and
// a node_modules link to the installed packages, so scripts resolve them.
func workDir(t *testing.T, modules string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(nodeDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".mjs") {
			b, err := os.ReadFile(filepath.Join(nodeDir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Symlink(filepath.Join(modules, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// baseEnv is the environment every client runs with: PATH, a private HOME,
// and nothing of the caller's credentials.
func baseEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + os.TempDir(), "LANG=C.UTF-8", "NO_COLOR=1"}
}

// runClient runs a client and returns its output and error.
func runClient(t *testing.T, dir string, env []string, timeout time.Duration, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = strings.NewReader("")
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (timed out after %s)", err, timeout)
	}
	return out.String(), err
}

// report logs what the client sent and Relay answered and, when
// RELAY_CLIENTTEST_RECORD is set and run is not "", adds the requests to the
// client's fixtures in testdata/requests/<client>/<run>-NN.json.
func report(t *testing.T, r *relay, client, version, run, model string) {
	t.Helper()
	xs := r.rec.exchanges()
	for _, x := range xs {
		line := fmt.Sprintf("%s %s", x.Method, x.Path)
		if x.Query != "" {
			line += "?" + x.Query
		}
		line += fmt.Sprintf(" → %d", x.Status)
		if x.Error != "" {
			line += " " + x.Error
		}
		t.Log(line)
	}
	if os.Getenv("RELAY_CLIENTTEST_RECORD") == "" || run == "" {
		return
	}
	for i := range xs {
		xs[i].Client, xs[i].Model = client+" "+version, model
	}
	if err := fixtures.add(client, run, xs); err != nil {
		t.Fatal(err)
	}
}

// fixtures writes recorded requests; one per test process.
var fixtures = &fixtureWriter{seen: map[string]bool{}, cleared: map[string]bool{}}

// fixtureWriter keeps one fixture per distinct request of a client: the same
// method, path, query and body once the model name is set aside (retries and
// runs that sent the same thing add nothing).
type fixtureWriter struct {
	mu      sync.Mutex
	seen    map[string]bool // client + normalized request
	cleared map[string]bool // client folders emptied by this process
}

// expected is the outcome a recorded request must have through a binding of
// shape: 2xx, except where README and docs/translation.md say Relay refuses
// it (token counting passes through to anthropic bindings only).
func expected(x exchange, shape wire.Shape) string {
	if x.Path == "/v1/messages/count_tokens" && shape != wire.ShapeAnthropic {
		return "400"
	}
	return "2xx"
}

func (f *fixtureWriter) add(client, run string, xs []exchange) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	dir := filepath.Join("testdata", "requests", client)
	if !f.cleared[client] {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		f.cleared[client] = true
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	n := 0
	for _, x := range xs {
		id := client + "\x00" + x.Method + " " + x.Path + "?" + x.Query + "\x00" + string(x.Body)
		id = strings.ReplaceAll(id, x.Model, "{model}")
		if f.seen[id] {
			continue
		}
		f.seen[id] = true
		x.Expect = map[string]string{}
		for _, b := range shapes {
			x.Expect[string(b.shape)] = expected(x, b.shape)
		}
		b, err := json.MarshalIndent(x, "", "  ")
		if err != nil {
			return err
		}
		n++
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%02d.json", run, n)), append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// sdks are the SDK scripts of testdata/node and the fixture folder of each.
var sdks = []struct{ script, client, pkg string }{
	{"openai.mjs", "openai-js", "openai"},
	{"anthropic.mjs", "anthropic-js", "@anthropic-ai/sdk"},
	{"genai.mjs", "google-genai-js", "@google/genai"},
}

// TestSDKs runs each official SDK's script against a model of each binding
// shape, streamed and not: multi-turn conversations with the returned
// message pushed back, and tool round trips (see the scripts).
func TestSDKs(t *testing.T) {
	modules := install(t)
	for _, sdk := range sdks {
		t.Run(sdk.client, func(t *testing.T) {
			for _, b := range shapes {
				for _, stream := range []bool{false, true} {
					mode := map[bool]string{false: "plain", true: "stream"}[stream]
					t.Run(string(b.shape)+"/"+mode, func(t *testing.T) {
						parallel(t)
						r := startRelay(t)
						dir := workDir(t, modules)
						env := append(baseEnv(t.TempDir()), "RELAY_URL="+r.URL, "RELAY_KEY="+relayKey, "RELAY_MODEL="+modelName(b.shape), "RELAY_SHAPE="+string(b.shape), "RELAY_STREAM="+map[bool]string{false: "0", true: "1"}[stream])
						out, err := runClient(t, dir, env, time.Minute, "node", sdk.script)
						report(t, r, sdk.client, pinned(t, sdk.pkg), string(b.shape)+"-"+mode, modelName(b.shape))
						if err != nil {
							t.Fatalf("node %s: %v\n%s", sdk.script, err, out)
						}
					})
				}
			}
		})
	}
}

// pinned returns the version package.json pins for pkg.
func pinned(t *testing.T, pkg string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(nodeDir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return p.Dependencies[pkg]
}

// parallel runs client subtests side by side, except while recording, where
// the order decides the fixtures' names.
func parallel(t *testing.T) {
	if os.Getenv("RELAY_CLIENTTEST_RECORD") == "" {
		t.Parallel()
	}
}
