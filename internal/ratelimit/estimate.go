package ratelimit

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/snapshot"
)

// Defaults of the learned output estimate (see Options).
const (
	DefaultEstimatePercentile = 95
	DefaultEstimateSamples    = 256
	DefaultEstimateMinSamples = 20
	DefaultEstimateFloor      = 256
	estimateEvery             = 8 // samples between two recomputations of a percentile
)

// estimates learns the output tokens of settled requests, per model and
// per (policy, model), so that a request reserves what such requests
// actually use rather than its max_tokens (agents ask for 32 000 and use a
// few hundred). Each key keeps its last samples in a ring and a
// percentile of them, recomputed every few samples; a reservation reads
// the percentile with one map lookup and one atomic load.
type estimates struct {
	percentile, minSamples int
	samples                int
	by                     sync.Map // estimateKey → *outputs
	// learnt, when set, is told each percentile this process computes,
	// to share it with the other pods. It must not block.
	learnt func(estimateKey, int64)
}

// estimateKey names what is learned: a model's outputs under one policy,
// or (policy zero) under every policy.
type estimateKey struct{ policy, model snapshot.ID }

// outputs is one key's recent output counts.
type outputs struct {
	learned atomic.Int64 // the percentile; 0 until minSamples were seen
	shared  atomic.Int64 // the last percentile another pod shared

	mu   sync.Mutex
	ring []int64
	next int
	seen int
	buf  []int64 // scratch for the percentile
}

// learned returns the learned output estimate of model under policy: the
// policy's own once it has enough samples, else the model's, else 0.
func (e *estimates) learned(policy, model snapshot.ID) int64 {
	if e == nil {
		return 0
	}
	for _, k := range [2]estimateKey{{policy, model}, {model: model}} {
		if v, ok := e.by.Load(k); ok {
			o := v.(*outputs)
			if n := o.learned.Load(); n > 0 {
				return n
			}
			if n := o.shared.Load(); n > 0 {
				return n
			}
		}
	}
	return 0
}

// adopt takes a percentile another pod learned: used until this process
// has learned its own.
func (e *estimates) adopt(k estimateKey, n int64) {
	if e == nil || n <= 0 {
		return
	}
	e.of(k).shared.Store(n)
}

func (e *estimates) of(k estimateKey) *outputs {
	v, ok := e.by.Load(k)
	if !ok {
		v, _ = e.by.LoadOrStore(k, &outputs{ring: make([]int64, 0, e.samples)})
	}
	return v.(*outputs)
}

// record adds a settled request's output tokens to both of its keys.
func (e *estimates) record(policy, model snapshot.ID, output int64) {
	if e == nil || output <= 0 {
		return
	}
	e.add(estimateKey{policy, model}, output)
	e.add(estimateKey{model: model}, output)
}

func (e *estimates) add(k estimateKey, n int64) {
	o := e.of(k)
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.ring) < e.samples {
		o.ring = append(o.ring, n)
	} else {
		o.ring[o.next] = n
		o.next = (o.next + 1) % e.samples
	}
	o.seen++
	if len(o.ring) < e.minSamples || (o.seen%estimateEvery != 0 && o.learned.Load() != 0) {
		return
	}
	o.buf = append(o.buf[:0], o.ring...)
	slices.Sort(o.buf)
	i := (len(o.buf)*e.percentile + 99) / 100 // nearest rank
	p := o.buf[min(len(o.buf), max(1, i))-1]
	if o.learned.Swap(p) != p && e.learnt != nil {
		e.learnt(k, p)
	}
}

// estimateMessage is what a pod publishes of a percentile it learned:
// "<pod> <policy> <model> <tokens>" (policy all zeros for the model's).
func estimateMessage(pod string, k estimateKey, n int64) string {
	return pod + " " + k.policy.String() + " " + k.model.String() + " " + strconv.FormatInt(n, 10)
}

// parseEstimateMessage reads an estimateMessage.
func parseEstimateMessage(msg string) (pod string, k estimateKey, n int64, err error) {
	f := strings.Fields(msg)
	if len(f) != 4 {
		return "", k, 0, errors.New("parse estimate message: want 4 fields")
	}
	if k.policy, err = uuid.Parse(f[1]); err != nil {
		return "", k, 0, fmt.Errorf("parse estimate message policy: %w", err)
	}
	if k.model, err = uuid.Parse(f[2]); err != nil {
		return "", k, 0, fmt.Errorf("parse estimate message model: %w", err)
	}
	if n, err = strconv.ParseInt(f[3], 10, 64); err != nil || n <= 0 {
		return "", k, 0, fmt.Errorf("parse estimate message tokens %q: want a positive integer", f[3])
	}
	return f[0], k, n, nil
}
