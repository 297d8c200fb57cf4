package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/relay-llm/relay/internal/configfile"
	"github.com/relay-llm/relay/openapi/models"
)

const applyUsage = `relay apply -f FILE|DIR|- [-f …] [--dry-run] [--prune] [--allow-secrets] [--url URL] [--token TOKEN]

Sends config-as-code documents (kind + spec) to the control plane, which
compares them with what it holds and applies the difference in one
transaction: all of it, or (on the first refusal) nothing. Prints the plan.
--dry-run runs the apply and rolls it back. See docs/config-as-code.md.`

// applyCmd is `relay apply`.
func applyCmd(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("apply", stderr)
	fs.Usage = usageFunc(fs, stderr, applyUsage)
	var (
		files  stringList
		c      conn
		body   models.ApplyRequest
		dryRun bool
		prune  bool
		secret bool
	)
	fs.Var(&files, "f", "a YAML `FILE`, a directory of *.yaml/*.yml files, or - for stdin (repeatable)")
	fs.BoolVar(&dryRun, "dry-run", false, "print the plan, run it and roll it back: change nothing")
	fs.BoolVar(&prune, "prune", false, "delete objects of the kinds in the files that the files do not describe")
	fs.BoolVar(&secret, "allow-secrets", false, "accept host keys with a literal secret (sealed by the control plane)")
	c.register(fs)
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if len(files) == 0 {
		fs.Usage()
		return errors.New("apply: -f is required")
	}
	read, err := configfile.Read(files, stdin)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	// Decoded here too, so a typo is reported before anything is sent.
	if _, err := configfile.ParseAll(read); err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	for _, f := range read {
		body.Files = append(body.Files, models.ApplyFile{Name: f.Name, Content: string(f.Data)})
	}
	body.DryRun, body.Prune, body.AllowSecrets = &dryRun, &prune, &secret
	cl, err := c.admin(getenv)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	start := time.Now()
	r, err := cl.ApplyConfigWithResponse(ctx, body)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	if r.JSON200 == nil {
		err := configfile.ResponseError(r.StatusCode(), r.Body)
		var ae *configfile.APIError
		if errors.As(err, &ae) && ae.Status != http.StatusUnauthorized && ae.Message != "" {
			return fmt.Errorf("apply: %s", ae.Message) // it names the document and the operation's answer
		}
		return fmt.Errorf("apply: %w", err)
	}
	res := r.JSON200
	for _, w := range res.Warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	if _, err := io.WriteString(stdout, res.Plan); err != nil {
		return err
	}
	if dryRun || res.Created+res.Updated+res.Deleted == 0 {
		return nil
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
