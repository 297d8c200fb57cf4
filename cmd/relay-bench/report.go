package main

import (
	"fmt"
	"io"
	"time"
)

// report is the outcome of a run: one measurement per mode, concurrency and
// target, in that order, direct before relay.
type report struct {
	rows    []measurement
	peakRSS int64 // Relay's VmHWM in bytes; 0 when unknown
	cores   int
	// The CPU time used while measuring (warm-ups included), over wall:
	// whatever else ran on the machine skews every figure, so say how much.
	wall time.Duration
	cpu  cpuUse
}

// write prints the comparison table, then what Relay costs per mode and
// concurrency, then its peak memory, as markdown. The mock's CPU per request
// in a direct measurement is the yardstick: what one plain Go HTTP hop costs
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
	fmt.Fprintln(w, "| mode | callers | added p50 | added p99 | added ttfb p50 | relay req/s vs direct | Relay CPU / request | Relay CPU busy | mock CPU / request |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, p := range r.pairs() {
		d, rl := p[0].stats(), p[1].stats()
		addedTTFB := "–"
		if p[1].mode == stream {
			addedTTFB = fmtDelta(rl.ttfb50 - d.ttfb50)
		}
		ratio, busy := "–", "n/a"
		if d.rps > 0 {
			ratio = fmt.Sprintf("%.0f%%", 100*rl.rps/d.rps)
		}
		if p[1].relayCPU >= 0 {
			busy = fmt.Sprintf("%.2f cores", p[1].relayCPU.Seconds()/p[1].elapsed.Seconds())
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n",
			p[1].mode, p[1].conc, fmtDelta(rl.p50-d.p50), fmtDelta(rl.p99-d.p99), addedTTFB, ratio,
			perRequest(p[1].relayCPU, rl.requests), busy, perRequest(p[0].mockCPU, d.requests))
	}

	fmt.Fprintln(w)
	if r.peakRSS > 0 {
		fmt.Fprintf(w, "Relay peak RSS (VmHWM): %.1f MiB.\n", float64(r.peakRSS)/(1<<20))
	}
	fmt.Fprintf(w, "%d cores shared by the mock upstream, Relay and the load generator. "+
		"CPU time from /proc at USER_HZ=%d (10ms resolution per reading).\n", r.cores, userHZ)
	if c := r.cpu; c.machine >= 0 && c.relay >= 0 && c.mock >= 0 && c.harness >= 0 && r.wall > 0 {
		avail := r.wall * time.Duration(r.cores)
		pct := func(d time.Duration) float64 { return 100 * d.Seconds() / avail.Seconds() }
		other := c.machine - c.relay - c.mock - c.harness
		fmt.Fprintf(w, "While measuring (%.0fs, warm-ups included) the cores were %.0f%% busy: "+
			"Relay %.0f%%, mock %.0f%%, load generator %.0f%%, everything else (other processes, kernel softirq) %.0f%%.\n",
			r.wall.Seconds(), pct(c.machine), pct(c.relay), pct(c.mock), pct(c.harness), pct(other))
	}
	for _, m := range r.rows {
		if m.errors > 0 {
			fmt.Fprintf(w, "%s ×%d %s: %d errors, the first: %s\n", m.mode, m.conc, m.target, m.errors, m.firstErr)
		}
	}
}

// pairs matches each relay measurement with the direct one of the same mode
// and concurrency.
func (r *report) pairs() [][2]measurement {
	var out [][2]measurement
	for _, rl := range r.rows {
		if rl.target != "relay" {
			continue
		}
		for _, d := range r.rows {
			if d.target == "direct" && d.mode == rl.mode && d.conc == rl.conc {
				out = append(out, [2]measurement{d, rl})
				break
			}
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
