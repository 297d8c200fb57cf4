package main

import (
	"fmt"
	"io"
	"time"
)

// report is the outcome of a run: one measurement per mode, concurrency and
// target, in that order, direct first.
type report struct {
	rows  []measurement
	mem   []memory // one per target, in target order
	held  int      // streams held open at once for memory.perStream
	cores int
	// The CPU time used while measuring (warm-ups included), over wall:
	// whatever else ran on the machine skews every figure, so say how much.
	wall time.Duration
	cpu  cpuUse
}

// memory is a target's resident memory in bytes: at idle after start-up, and
// its peak (VmHWM) at the end of the run; -1 unknown. For direct, the mock's.
type memory struct {
	target     string
	idle, peak int64
	perStream  int64 // RSS growth per stream held open (heldStreams); -1 not measured
}

// write prints the latency table, then what each gateway costs per mode and
// concurrency beside direct, then memory, as markdown. For the direct rows
// the CPU and write figures are the mock's: what one plain Go HTTP hop costs
// on this machine.
func (r *report) write(w io.Writer) {
	fmt.Fprintln(w, "| mode | callers | target | requests | req/s | p50 | p90 | p99 | ttfb p50 | ttfb p99 | errors |")
	fmt.Fprintln(w, "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, m := range r.rows {
		s := m.stats()
		ttfb50, ttfb99 := "–", "–"
		if m.mode == stream {
			ttfb50, ttfb99 = fmtDur(s.ttfb50), fmtDur(s.ttfb99)
		}
		fmt.Fprintf(w, "| %s | %d | %s | %d | %.0f | %s | %s | %s | %s | %s | %d |\n",
			m.mode, m.conc, m.target, s.requests, s.rps, fmtDur(s.p50), fmtDur(s.p90), fmtDur(s.p99), ttfb50, ttfb99, m.errors)
	}

	fmt.Fprintln(w)
	fmt.Fprintln(w, "| mode | callers | target | added p50 | added p99 | added ttfb p50 | req/s vs direct | CPU / request | CPU busy | writes / request | Redis CPU / request | TLS handshakes / request |")
	fmt.Fprintln(w, "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, m := range r.rows {
		d, ok := r.direct(m)
		if !ok {
			continue
		}
		ds, s := d.stats(), m.stats()
		added, added99, addedTTFB, ratio := "–", "–", "–", "–"
		use, name := m.gw, m.target
		if m.target == targetDirect {
			use, name = m.mock, "direct (the mock)"
		} else {
			added, added99 = fmtDelta(s.p50-ds.p50), fmtDelta(s.p99-ds.p99)
			if m.mode == stream {
				addedTTFB = fmtDelta(s.ttfb50 - ds.ttfb50)
			}
			if ds.rps > 0 {
				ratio = fmt.Sprintf("%.0f%%", 100*s.rps/ds.rps)
			}
		}
		busy := "n/a"
		if use.cpu >= 0 && m.elapsed > 0 {
			busy = fmt.Sprintf("%.2f cores", use.cpu.Seconds()/m.elapsed.Seconds())
		}
		writes := "n/a"
		if use.writes >= 0 && s.requests > 0 {
			writes = fmt.Sprintf("%.1f", float64(use.writes)/float64(s.requests))
		}
		hs := "–"
		if m.handshakes >= 0 && s.requests > 0 {
			hs = fmt.Sprintf("%.4f", float64(m.handshakes)/float64(s.requests))
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			m.mode, m.conc, name, added, added99, addedTTFB, ratio,
			perRequest(use.cpu, s.requests), busy, writes, perRequest(m.redisCPU, s.requests), hs)
	}
	r.writeTLS(w)

	fmt.Fprintln(w)
	fmt.Fprintf(w, "| target | RSS idle | RSS peak | RSS per open stream (%d held at once) |\n", r.held)
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	for _, m := range r.mem {
		name := m.target
		if name == targetDirect {
			name = "direct (the mock)"
		}
		per := "–"
		if m.perStream >= 0 {
			per = fmt.Sprintf("%.1f KiB", float64(m.perStream)/(1<<10))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", name, fmtMiB(m.idle), fmtMiB(m.peak), per)
	}

	fmt.Fprintln(w)
	fmt.Fprintf(w, "%d cores shared by the mock upstream, the gateways and the load generator. "+
		"CPU time from /proc at USER_HZ=%d (10ms resolution per reading); writes are write system calls (syscw in /proc/<pid>/io); "+
		"Redis CPU is used_cpu_sys+used_cpu_user from INFO cpu, whoever caused it.\n", r.cores, userHZ)
	if c := r.cpu; c.machine >= 0 && c.gateways >= 0 && c.mock >= 0 && c.harness >= 0 && r.wall > 0 {
		avail := r.wall * time.Duration(r.cores)
		pct := func(d time.Duration) float64 { return 100 * d.Seconds() / avail.Seconds() }
		other := c.machine - c.gateways - c.mock - c.harness
		fmt.Fprintf(w, "While measuring (%.0fs, warm-ups included) the cores were %.0f%% busy: "+
			"gateways %.0f%%, mock %.0f%%, load generator %.0f%%, everything else (other processes, kernel softirq) %.0f%%.\n",
			r.wall.Seconds(), pct(c.machine), pct(c.gateways), pct(c.mock), pct(c.harness), pct(other))
	}
	for _, m := range r.rows {
		if m.errors > 0 {
			fmt.Fprintf(w, "%s ×%d %s: %d errors, the first: %s\n", m.mode, m.conc, m.target, m.errors, m.firstErr)
		}
	}
}

// writeTLS sets Relay's CPU per request on each TLS route beside its CPU on
// the plain route, measured in the same slices: the figure users get is
// the TLS one.
func (r *report) writeTLS(w io.Writer) {
	head := false
	for _, m := range r.rows {
		if m.target != targetRelay && m.target != targetBaseline {
			continue
		}
		plain := cpuPer(m)
		cells := ""
		for _, suffix := range []string{tlsH2, tlsH1} {
			t, ok := r.find(m.target+suffix, m)
			if !ok {
				continue
			}
			c := cpuPer(t)
			ratio := "n/a"
			if plain > 0 && c > 0 {
				ratio = fmt.Sprintf("%+.0f%%", 100*(c/plain-1))
			}
			cells += fmt.Sprintf(" %s | %s |", perRequest(t.gw.cpu, t.stats().requests), ratio)
		}
		if cells == "" {
			continue
		}
		if !head {
			fmt.Fprintln(w)
			fmt.Fprintln(w, "| mode | callers | gateway | CPU / request (plain) | TLS h2 | vs plain | TLS h1 | vs plain |")
			fmt.Fprintln(w, "|---|---:|---|---:|---:|---:|---:|---:|")
			head = true
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s |%s\n", m.mode, m.conc, m.target, perRequest(m.gw.cpu, m.stats().requests), cells)
	}
}

// cpuPer is a gateway's CPU seconds per request in m; -1 unknown.
func cpuPer(m measurement) float64 {
	n := m.stats().requests
	if m.gw.cpu < 0 || n == 0 {
		return -1
	}
	return m.gw.cpu.Seconds() / float64(n)
}

// find is target name's measurement of m's mode and concurrency.
func (r *report) find(name string, m measurement) (measurement, bool) {
	for _, d := range r.rows {
		if d.target == name && d.mode == m.mode && d.conc == m.conc {
			return d, true
		}
	}
	return measurement{}, false
}

// direct is the direct measurement of m's mode and concurrency.
func (r *report) direct(m measurement) (measurement, bool) { return r.find(targetDirect, m) }

// pairs matches each gateway measurement with the direct one of the same
// mode and concurrency.
func (r *report) pairs() [][2]measurement {
	var out [][2]measurement
	for _, m := range r.rows {
		if m.target == targetDirect {
			continue
		}
		if d, ok := r.direct(m); ok {
			out = append(out, [2]measurement{d, m})
		}
	}
	return out
}

// perRequest is CPU time per request, "n/a" when unknown.
func perRequest(cpu time.Duration, requests int) string {
	if cpu < 0 || requests == 0 {
		return "n/a"
	}
	return fmtDur(cpu / time.Duration(requests))
}

func fmtMiB(b int64) string {
	if b < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// fmtDur prints a latency with three significant digits or so: 87µs, 1.23ms, 45.6ms.
func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

// fmtDelta is fmtDur with a sign.
func fmtDelta(d time.Duration) string {
	if d < 0 {
		return "−" + fmtDur(-d)
	}
	return "+" + fmtDur(d)
}
