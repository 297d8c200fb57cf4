package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/relay-llm/relay/internal/configfile"
)

const applyUsage = `relay apply -f FILE|DIR|- [-f …] [--dry-run] [--prune] [--allow-secrets] [--url URL] [--token TOKEN]

Reads config-as-code documents (kind + spec), compares them with the control
plane, prints the plan, then applies it. See docs/config-as-code.md.`

// applyCmd is `relay apply`.
func applyCmd(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("apply", stderr)
	fs.Usage = usageFunc(fs, stderr, applyUsage)
	var (
		files    stringList
		c        conn
		opts     configfile.Options
		dryRun   bool
		parallel int
	)
	fs.Var(&files, "f", "a YAML `FILE`, a directory of *.yaml/*.yml files, or - for stdin (repeatable)")
	fs.BoolVar(&dryRun, "dry-run", false, "print the plan and change nothing")
	fs.BoolVar(&opts.Prune, "prune", false, "delete objects of the kinds in the files that the files do not describe")
	fs.BoolVar(&opts.AllowSecrets, "allow-secrets", false, "accept host keys with a literal secret (sealed by the control plane)")
	fs.IntVar(&parallel, "parallel", 4, "API calls at once")
	c.register(fs)
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if len(files) == 0 {
		fs.Usage()
		return errors.New("apply: -f is required")
	}
	opts.Parallel = parallel

	docs, err := configfile.Load(files, stdin)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	cl, err := c.admin(getenv)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	plan, err := configfile.NewPlan(ctx, cl, docs, opts)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	for _, w := range plan.Warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	if err := plan.Print(stdout); err != nil {
		return err
	}
	if dryRun || plan.Empty() {
		return nil
	}
	start := time.Now()
	res, err := plan.Apply(ctx)
	if err != nil {
		return fmt.Errorf("apply: %w (%d of %d changes were made)", err, res.Created+res.Updated+res.Deleted, len(plan.Steps))
	}
	fmt.Fprintf(stdout, "applied: %d created, %d updated, %d deleted in %s\n",
		res.Created, res.Updated, res.Deleted, time.Since(start).Round(time.Millisecond))
	return nil
}

const exportUsage = `relay export [-o FILE] [--url URL] [--token TOKEN]

Writes the control plane's catalog as config-as-code documents, sorted and
without secrets, to stdout or FILE.`

// exportCmd is `relay export`.
func exportCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("export", stderr)
	fs.Usage = usageFunc(fs, stderr, exportUsage)
	var (
		c   conn
		out string
	)
	fs.StringVar(&out, "o", "", "write to this file instead of stdout")
	c.register(fs)
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	cl, err := c.admin(getenv)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	var buf bytes.Buffer
	warnings, err := configfile.Export(ctx, cl, &buf, 0)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	if out == "" || out == "-" {
		_, err := stdout.Write(buf.Bytes())
		return err
	}
	return writeFileAtomic(out, buf.Bytes())
}

// writeFileAtomic replaces path with data through a temporary file in the
// same directory, so a failed export never leaves half a file.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer os.Remove(f.Name()) // no-op after the rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("export: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}
