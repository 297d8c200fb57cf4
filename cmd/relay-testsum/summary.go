package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output, build-fail
}

// skip is a test that skipped, and the message it gave.
type skip struct{ pkg, test, why string }

// summary turns the event stream into plain go test output and the tally.
type summary struct {
	w                       io.Writer
	output                  map[string][]string // package + test → output lines not yet printed
	skips                   []skip
	passed, failed, skipped int
}

func newSummary(w io.Writer) *summary {
	return &summary{w: w, output: map[string][]string{}}
}

func (s *summary) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Action == "" {
			fmt.Fprintln(s.w, sc.Text()) // not an event: pass it on
			continue
		}
		s.event(e)
	}
	return sc.Err()
}

func (s *summary) event(e event) {
	key := e.Package + "\x00" + e.Test
	switch e.Action {
	case "build-output":
		fmt.Fprint(s.w, e.Output)
	case "output":
		if e.Test == "" {
			// Package lines: "ok", "FAIL", "? … [no test files]", and
			// what the package printed outside tests.
			if !strings.HasPrefix(e.Output, "=== ") && !strings.HasPrefix(e.Output, "PASS\n") && !strings.HasPrefix(e.Output, "FAIL\n") {
				fmt.Fprint(s.w, e.Output)
			}
			return
		}
		s.output[key] = append(s.output[key], e.Output)
	case "pass":
		if e.Test != "" {
			s.passed++
		}
		delete(s.output, key)
	case "fail":
		if e.Test == "" {
			s.unended(e.Package)
		}
		if e.Test != "" {
			s.failed++
			for _, line := range s.output[key] {
				if !strings.HasPrefix(strings.TrimSpace(line), "=== ") {
					fmt.Fprint(s.w, line)
				}
			}
		}
		delete(s.output, key)
	case "skip":
		if e.Test != "" {
			s.skipped++
			s.skips = append(s.skips, skip{e.Package, e.Test, skipReason(s.output[key])})
		}
		delete(s.output, key)
	}
}

// unended prints, when package pkg has failed, the output of its tests that
// never ended: a test binary that hit -timeout or panicked ends without a
// verdict for the tests it was running, and their output (what a hung test
// logged before it hung) would otherwise never be shown. Each counts as a
// failure.
func (s *summary) unended(pkg string) {
	var keys []string
	for key := range s.output {
		if p, test, _ := strings.Cut(key, "\x00"); p == pkg && test != "" {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	for _, key := range keys {
		_, test, _ := strings.Cut(key, "\x00")
		fmt.Fprintf(s.w, "--- DID NOT END: %s (%s was still running it when the package failed)\n", test, pkg)
		for _, line := range s.output[key] {
			if !strings.HasPrefix(strings.TrimSpace(line), "=== ") {
				fmt.Fprint(s.w, line)
			}
		}
		s.failed++
		delete(s.output, key)
	}
}

// skipReason is the message a skipped test logged: the lines after its
// "--- SKIP" line, else the last thing it logged.
func skipReason(lines []string) string {
	var why []string
	after := false
	for _, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "--- SKIP"):
			after = true
		case after && t != "":
			why = append(why, t)
		}
	}
	if len(why) == 0 {
		for i := len(lines) - 1; i >= 0; i-- {
			if t := strings.TrimSpace(lines[i]); t != "" && !strings.HasPrefix(t, "=== ") && !strings.HasPrefix(t, "--- ") {
				why = []string{t}
				break
			}
		}
	}
	return strings.Join(why, " ")
}

// finish prints the skipped tests, grouped by reason, and the closing line.
func (s *summary) finish() {
	if len(s.skips) > 0 {
		fmt.Fprintf(s.w, "\nSkipped on this machine (%d):\n", len(s.skips))
		sort.SliceStable(s.skips, func(i, j int) bool { return s.skips[i].pkg < s.skips[j].pkg })
		for _, k := range s.skips {
			if strings.Contains(k.test, "/") {
				continue // a subtest: its parent is listed, or the reason repeats it
			}
			why := k.why
			if why == "" {
				why = "(no reason given)"
			}
			fmt.Fprintf(s.w, "  %s %s: %s\n", k.pkg, k.test, why)
		}
	}
	fmt.Fprintf(s.w, "\n%d passed, %d failed, %d skipped\n", s.passed, s.failed, s.skipped)
}
