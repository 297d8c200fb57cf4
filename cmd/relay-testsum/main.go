// Command relay-testsum runs `go test -json` with the arguments it is given,
// prints what plain `go test` would (a line per package, the output of
// failed tests), and ends with the tests that skipped and why, and one
// closing line: "N passed, N failed, N skipped". It exits with go test's
// status. `make test` runs the suite through it, so a newcomer sees which
// suites did not run on this machine (no node, no chromium …) instead of a
// green run that quietly left them out.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run runs go test -json args and returns the exit status to end with.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	cmd := exec.CommandContext(ctx, goBin, append([]string{"test", "-json"}, args...)...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "relay-testsum:", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "relay-testsum:", err)
		return 2
	}
	s := newSummary(stdout)
	if err := s.read(out); err != nil {
		fmt.Fprintln(stderr, "relay-testsum: reading go test's output:", err)
	}
	err = cmd.Wait()
	s.finish()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		fmt.Fprintln(stderr, "relay-testsum:", err)
		return 2
	}
	if s.failed > 0 {
		return 1
	}
	return 0
}
