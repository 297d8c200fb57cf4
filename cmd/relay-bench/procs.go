package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	startTimeout = 60 * time.Second // for a child to print its address, and for Relay to be ready
	stopTimeout  = 15 * time.Second // after SIGTERM, before SIGKILL
)

var (
	mockUpLine  = regexp.MustCompile(`mock upstream listening on (http://\S+)`)
	relayUpLine = regexp.MustCompile(`Relay is up: inference on (\S+), control on (\S+)`)
)

// buildRelay compiles cmd/relay into dir. It names the package by import
// path, so it works from any directory inside the module.
func buildRelay(ctx context.Context, dir string, stderr io.Writer) (string, error) {
	bin := filepath.Join(dir, "relay")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/relay-llm/relay/cmd/relay")
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build relay (run from inside the module, or pass -relay-bin): %w", err)
	}
	return bin, nil
}

// child is a process the harness started and must stop.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and its output is read
	err  error         // the exit status; read after done
}

// startChild runs bin with args and env, waits until a line of its stdout
// matches up and returns the submatches. The child's stderr goes to stderr
// as it is; its other stdout lines go there too, with its name in front.
func startChild(ctx context.Context, name, bin string, args, env []string, up *regexp.Regexp, stderr io.Writer) (*child, []string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.SysProcAttr = sysProcAttr()
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{})}
	matched := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		found := false
		for sc.Scan() {
			if m := up.FindStringSubmatch(sc.Text()); m != nil && !found {
				found = true
				matched <- m
				continue
			}
			fmt.Fprintf(stderr, "%s: %s\n", name, sc.Text())
		}
		io.Copy(io.Discard, pr) // only a too-long line stops the scanner early; keep the pipe drained
	}()
	go func() {
		c.err = cmd.Wait()
		pw.Close()
		close(c.done)
	}()

	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	var err error
	select {
	case m := <-matched:
		return c, m, nil
	case <-c.done:
		return nil, nil, fmt.Errorf("%s exited before it was up: %v", name, c.err)
	case <-timer.C:
		err = fmt.Errorf("%s did not say it was up within %s", name, startTimeout)
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	c.stop()
	return nil, nil, err
}

// stop sends SIGTERM, waits for the process to exit (SIGKILL after
// stopTimeout) and returns its exit error, if it did not exit cleanly.
func (c *child) stop() error {
	select {
	case <-c.done:
		return c.exitErr()
	default:
	}
	c.cmd.Process.Signal(syscall.SIGTERM) // it may have exited meanwhile
	select {
	case <-c.done:
		return c.exitErr()
	case <-time.After(stopTimeout):
	}
	c.cmd.Process.Kill() // as above
	<-c.done
	return fmt.Errorf("%s did not exit within %s of SIGTERM; killed it", c.name, stopTimeout)
}

func (c *child) exitErr() error {
	if c.err != nil {
		return fmt.Errorf("%s: %w", c.name, c.err)
	}
	return nil
}

// pid is the child's process id, for /proc.
func (c *child) pid() int { return c.cmd.Process.Pid }

// pinned returns bin and args to run on core (taskset -c core bin args…)
// when pin is set, else as they are.
func pinned(pin bool, core int, bin string, args []string) (string, []string) {
	if !pin {
		return bin, args
	}
	return "taskset", append([]string{"-c", strconv.Itoa(core), bin}, args...)
}

// Cores the children run on with -pin: the gateways on one, the mock (and
// the harness, if run under taskset -c 0) on the other.
const (
	mockCore    = 0
	gatewayCore = 1
)

// startMock runs `relay mock-upstream` on a free loopback port and returns
// its base URL.
func startMock(ctx context.Context, bin string, pin bool, stderr io.Writer) (*child, string, error) {
	b, args := pinned(pin, mockCore, bin, []string{"mock-upstream", "--addr", "127.0.0.1:0"})
	c, m, err := startChild(ctx, "mock-upstream", b, args, childEnv(), mockUpLine, stderr)
	if err != nil {
		return nil, "", err
	}
	return c, m[1], nil
}

// startRelay runs `relay serve` on dbURL, on free loopback ports, and returns
// the inference plane's base URL once /readyz answers 200. With redisURL its
// limiter uses that Redis, under redisPrefix; extraEnv is added to its
// environment.
func startRelay(ctx context.Context, bin, dbURL, masterKey, dataDir, redisURL, redisPrefix string, pin bool, extraEnv []string, stderr io.Writer) (*child, string, error) {
	env := append(childEnv(), extraEnv...)
	if redisURL != "" {
		env = append(env, "RELAY_REDIS_URL="+redisURL, "RELAY_REDIS_PREFIX="+redisPrefix)
	}
	env = append(env,
		"RELAY_DATABASE_URL="+dbURL,
		"RELAY_MASTER_KEY="+masterKey,
		"RELAY_BIND_ADDRESS=127.0.0.1",
		"RELAY_PORT=0",
		"RELAY_CONTROL_PORT=0",
		"RELAY_DEMO=false",
		"RELAY_LOG_LEVEL=warn",
		"RELAY_DATA_DIR="+dataDir,
		"RELAY_SHUTDOWN_TIMEOUT=5s",
	)
	b, args := pinned(pin, gatewayCore, bin, []string{"serve"})
	c, m, err := startChild(ctx, "relay", b, args, env, relayUpLine, stderr)
	if err != nil {
		return nil, "", err
	}
	base := "http://" + m[1]
	if err := waitReady(ctx, c, base+"/readyz"); err != nil {
		c.stop()
		return nil, "", err
	}
	return c, base, nil
}

// startPeer runs another gateway from -peer-cmd through sh (exec'd, so its
// process is the one measured), with {mock} in the command replaced by the
// mock's base URL, and waits until -peer-url answers at all.
func startPeer(ctx context.Context, cfg config, mockURL string, stderr io.Writer) (*child, error) {
	script := "exec " + strings.ReplaceAll(cfg.peerCmd, "{mock}", mockURL)
	b, args := pinned(cfg.pin, gatewayCore, "sh", []string{"-c", script})
	c, err := startPlain(cfg.peerName, b, args, stderr)
	if err != nil {
		return nil, err
	}
	if err := waitAnswers(ctx, c, cfg.peerURL); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// startPlain runs bin with the harness's environment, its output going to
// stderr with its name in front.
func startPlain(name, bin string, args []string, stderr io.Writer) (*child, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = os.Environ()
	cmd.SysProcAttr = sysProcAttr()
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			fmt.Fprintf(stderr, "%s: %s\n", name, sc.Text())
		}
		io.Copy(io.Discard, pr) // keep the pipe drained
	}()
	go func() {
		c.err = cmd.Wait()
		pw.Close()
		close(c.done)
	}()
	return c, nil
}

// waitAnswers polls url until it answers anything at all over HTTP.
func waitAnswers(ctx context.Context, c *child, url string) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-tick.C:
		case <-c.done:
			return fmt.Errorf("%s exited before it answered: %v", c.name, c.err)
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer: %w", url, context.Cause(ctx))
		}
	}
}

// waitReady polls url until it answers 200, the child exits or startTimeout passes.
func waitReady(ctx context.Context, c *child, url string) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-tick.C:
		case <-c.done:
			return fmt.Errorf("%s exited before it was ready: %v", c.name, c.err)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w", url, context.Cause(ctx))
		}
	}
}

// childEnv is the harness's environment without RELAY_ settings, so the
// children run as configured here and not as the caller's shell says.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RELAY_") {
			env = append(env, kv)
		}
	}
	return env
}

// userHZ is the unit of utime and stime in /proc/<pid>/stat: USER_HZ, which
// is 100 on every Linux architecture Relay runs on (x86, arm64). It is
// assumed rather than read from sysconf(_SC_CLK_TCK), which needs cgo; so CPU
// time has a resolution of 10ms per process per measurement.
const userHZ = 100

// cpuTime is the user plus system CPU time process pid has used, from
// /proc/<pid>/stat; -1 when that cannot be read (not Linux, process gone).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// Fields follow "pid (comm) "; comm may hold spaces, so split after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return -1
	}
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return time.Duration(utime+stime) * time.Second / userHZ
}

// procStatusKB is a size field of /proc/<pid>/status (VmRSS:, VmHWM:) in
// bytes.
func procStatusKB(pid int, field string) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1, fmt.Errorf("read %s: %w", field, err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return -1, fmt.Errorf("read %s: %w", field, err)
			}
			return kb << 10, nil
		}
	}
	return -1, fmt.Errorf("read %s: not in /proc status", field)
}

// syscw is the number of write-family system calls (write, writev, sendto,
// sendmsg…) process pid has made, from /proc/<pid>/io; -1 when unknown.
func syscw(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/io")
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "syscw:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// machineCPU is the CPU time every process and the kernel have used since
// boot, summed over all cores: user, nice, system, irq and softirq from the
// "cpu" line of /proc/stat (guest time is inside user). -1 when unknown.
func machineCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return -1
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return -1
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system [idle iowait] irq softirq
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return -1
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ
}
