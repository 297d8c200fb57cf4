// Command relay is the Relay LLM gateway: `relay serve` runs both planes;
// the other subcommands migrate the database, run the mock upstream provider
// and print the version. main only wires the process to run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first signal starts a graceful shutdown (drain delay, drain,
	// flush); a second one ends the process at once.
	context.AfterFunc(ctx, stop)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		os.Exit(1)
	}
}

const usage = `usage: relay <command> [flags]

commands:
  serve                 run the inference and control planes (default; relay serve --help lists its flags)
  migrate up|down|status  apply, roll back or list database migrations
  mock-upstream --addr A  run the mock upstream provider (OpenAI, Anthropic, Gemini shapes)
  apply -f FILE|DIR|-   apply config-as-code documents to a control plane (--dry-run, --prune)
  export [-o FILE]      write a control plane's catalog as config-as-code documents
  keys mint             mint a relay key (printed once)
  token mint            mint an inference token for a signed-in user
  rotate-master-key --new-key K  reseal every sealed host key under a new master key
  usage-consume         load the JetStream usage stream into the ledger (RELAY_USAGE_SINK=jetstream)
  healthcheck           exit 0 when the local inference plane answers /readyz 200 (container health checks)
  version               print the version

apply, export, keys and token reach the control plane at --url or $RELAY_URL
(default http://127.0.0.1:8081) with --token or $RELAY_ADMIN_TOKEN.
`

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	} else if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help":
			cmd = "help"
		}
	}
	err := runCommand(ctx, cmd, args, getenv, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil // the flag set printed its usage
	}
	return err
}

func runCommand(ctx context.Context, cmd string, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	switch cmd {
	case "serve":
		return serve(ctx, args, getenv, stdout, stderr)
	case "migrate":
		return migrateCmd(ctx, args, getenv, stdout, stderr)
	case "mock-upstream":
		return mockUpstream(ctx, args, stdout, stderr)
	case "apply":
		return applyCmd(ctx, args, getenv, os.Stdin, stdout, stderr)
	case "export":
		return exportCmd(ctx, args, getenv, stdout, stderr)
	case "keys":
		return keysCmd(ctx, args, getenv, stdout, stderr)
	case "token":
		return tokenCmd(ctx, args, getenv, os.Stdin, stdout, stderr)
	case "rotate-master-key":
		return rotateMasterKey(ctx, args, getenv, stdout, stderr)
	case "usage-consume":
		return usageConsume(ctx, args, getenv, stderr)
	case "healthcheck":
		return healthcheck(ctx, args, getenv, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "relay", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", cmd)
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}
