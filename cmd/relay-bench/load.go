package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// target is one end the load generator calls: the mock directly, or Relay.
type target struct {
	name   string // "direct", "relay", …
	pid    int    // the gateway's process; 0 for direct
	url    string // the chat completions endpoint
	auth   string // the Authorization header
	model  string // the model the body names
	client *http.Client
	// The mock behind the gateway when it is not the plain one (the TLS
	// mock), and the TLS handshakes it has completed for this target so
	// far (nil: not a TLS route).
	mockPID    int
	handshakes func(context.Context) int64
}

func newTarget(name, baseURL, key, model string, maxConc int, timeout time.Duration) target {
	return target{
		name:  name,
		url:   baseURL + "/v1/chat/completions",
		auth:  "Bearer " + key,
		model: model,
		client: &http.Client{
			Timeout: timeout,
			Transport: &http.Transport{
				DialContext:         (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext,
				MaxIdleConnsPerHost: maxConc, // every caller keeps its connection
				IdleConnTimeout:     90 * time.Second,
				DisableCompression:  true, // measure the bytes as sent, not gzip
			},
		},
	}
}

// requestBody is the same small chat request for both targets, apart from the
// model name. Streams ask for usage, as Relay does upstream on every stream,
// so the mock does the same work whichever way the request came.
func requestBody(m mode, model string) []byte {
	msgs := `"messages":[{"role":"system","content":"You are a terse assistant."},` +
		`{"role":"user","content":"Hello, Relay. Say something short about load balancing."}]`
	if m == stream {
		return []byte(`{"model":"` + model + `","stream":true,"stream_options":{"include_usage":true},` + msgs + `}`)
	}
	return []byte(`{"model":"` + model + `",` + msgs + `}`)
}

// sample is one successful request: the time to the whole response and to
// its first body byte.
type sample struct {
	total, ttfb time.Duration
}

// measurement is what conc callers saw of one target in one mode.
type measurement struct {
	mode     mode
	conc     int
	target   string
	samples  []sample // successful requests
	errors   int
	firstErr string
	elapsed  time.Duration // from the first request to the end of the last, summed over slices
	// What the target's gateway process (none for direct) and the mock used
	// over the measurement, from /proc; -1 where it could not be read.
	gw, mock counters
	// Redis's own CPU time over the measurement (INFO cpu); -1 unknown.
	redisCPU time.Duration
	// TLS handshakes the mock completed over the measurement; -1: not a TLS
	// route, or unknown.
	handshakes int64
}

// add merges slice, a later measurement of the same target, into m.
func (m *measurement) add(slice measurement) {
	m.samples = append(m.samples, slice.samples...)
	m.errors += slice.errors
	if m.firstErr == "" {
		m.firstErr = slice.firstErr
	}
	m.elapsed += slice.elapsed
	m.gw = m.gw.add(slice.gw)
	m.mock = m.mock.add(slice.mock)
	m.redisCPU = addCPU(m.redisCPU, slice.redisCPU)
	if m.handshakes >= 0 && slice.handshakes >= 0 {
		m.handshakes += slice.handshakes
	} else {
		m.handshakes = -1
	}
}

// add sums two readings of which either part may be unknown (-1).
func (c counters) add(d counters) counters {
	out := counters{addCPU(c.cpu, d.cpu), -1}
	if c.writes >= 0 && d.writes >= 0 {
		out.writes = c.writes + d.writes
	}
	return out
}

// addCPU adds two CPU times of which either may be unknown (-1).
func addCPU(a, b time.Duration) time.Duration {
	if a < 0 || b < 0 {
		return -1
	}
	return a + b
}

// load runs conc callers against t, each sending one request after another
// until d has passed or limit requests have been started, and returns what they
// saw. A request in flight at the deadline is waited for and counted.
func load(ctx context.Context, t target, m mode, conc int, d time.Duration, limit int) measurement {
	body := requestBody(m, t.model)
	var started atomic.Int64
	type worker struct {
		samples  []sample
		errors   int
		firstErr error
	}
	workers := make([]worker, conc)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for i := range workers {
		w := &workers[i]
		wg.Go(func() {
			buf := make([]byte, 32<<10)
			for ctx.Err() == nil && time.Now().Before(deadline) && started.Add(1) <= int64(limit) {
				s, err := call(ctx, t, body, m == stream, buf)
				if err != nil {
					if w.errors == 0 {
						w.firstErr = err
					}
					w.errors++
					continue
				}
				w.samples = append(w.samples, s)
			}
		})
	}
	wg.Wait()
	out := measurement{mode: m, conc: conc, target: t.name, elapsed: time.Since(start)}
	for _, w := range workers {
		out.samples = append(out.samples, w.samples...)
		out.errors += w.errors
		if out.firstErr == "" && w.firstErr != nil {
			out.firstErr = w.firstErr.Error()
		}
	}
	return out
}

// call sends one request and reads the whole response, checking that it is a
// 200 and complete: a JSON object, or a stream that ends with [DONE].
func call(ctx context.Context, t target, body []byte, isStream bool, buf []byte) (sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return sample{}, err
	}
	req.Header.Set("Authorization", t.auth)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := t.client.Do(req)
	if err != nil {
		return sample{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return sample{}, fmt.Errorf("status %d: %s", resp.StatusCode, msg)
	}
	var s sample
	var tail [64]byte // the last bytes read, to check the response is complete
	tn := 0
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if s.ttfb == 0 {
				s.ttfb = time.Since(start)
			}
			tn = keepTail(&tail, tn, buf[:n])
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return sample{}, fmt.Errorf("read body: %w", err)
		}
	}
	s.total = time.Since(start)
	end := bytes.TrimSpace(tail[:tn])
	if isStream && !bytes.HasSuffix(end, []byte("data: [DONE]")) {
		return sample{}, fmt.Errorf("stream ended without [DONE]: …%q", end)
	}
	if !isStream && !bytes.HasSuffix(end, []byte("}")) {
		return sample{}, fmt.Errorf("body is not a whole JSON object: …%q", end)
	}
	return s, nil
}

// keepTail appends b to the tn bytes in tail, keeping the last len(tail), and
// returns how many tail now holds.
func keepTail(tail *[64]byte, tn int, b []byte) int {
	if len(b) >= len(tail) {
		return copy(tail[:], b[len(b)-len(tail):])
	}
	keep := min(tn, len(tail)-len(b))
	copy(tail[:], tail[tn-keep:tn])
	return keep + copy(tail[keep:], b)
}

// stats are the figures of one measurement.
type stats struct {
	requests      int
	rps           float64
	p50, p90, p99 time.Duration
	ttfb50        time.Duration
	ttfb99        time.Duration
}

func (m measurement) stats() stats {
	total := make([]time.Duration, len(m.samples))
	ttfb := make([]time.Duration, len(m.samples))
	for i, s := range m.samples {
		total[i], ttfb[i] = s.total, s.ttfb
	}
	slices.Sort(total)
	slices.Sort(ttfb)
	st := stats{
		requests: len(m.samples),
		p50:      percentile(total, 0.50),
		p90:      percentile(total, 0.90),
		p99:      percentile(total, 0.99),
		ttfb50:   percentile(ttfb, 0.50),
		ttfb99:   percentile(ttfb, 0.99),
	}
	if m.elapsed > 0 {
		st.rps = float64(len(m.samples)) / m.elapsed.Seconds()
	}
	return st
}

// percentile is the nearest-rank p-quantile of sorted (0 when it is empty).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(float64(len(sorted))*p)) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
