package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/snapshot"
)

// The semantic cache: an answer found by the similarity of the last user
// turn, within a partition where everything else is the same.
//
// The index is random-hyperplane LSH (SimHash) over the stored vectors:
// Bands groups of Bits hyperplanes each give a vector one bucket per band;
// a lookup reads the buckets its vector falls in, and next to them the
// buckets one flip away on the Probes least certain bits of each band
// (multi-probe), and reranks what they hold by exact cosine on the stored
// int8 vectors. The hyperplanes are drawn from a fixed seed, so every pod
// buckets a vector the same way.

// LSH parameters; BenchmarkSemanticLookup measures recall and latency with
// them (docs/benchmarks.md).
const (
	Bands = 16
	Bits  = 14
	// Probes is how many of a band's least certain bits a lookup also
	// flips, one at a time.
	Probes = 2
	// BucketCap is how many entries (the newest) one bucket names.
	BucketCap = 32
	// MaxPartitionEntries bounds the entries of one partition; the oldest
	// go first.
	MaxPartitionEntries = 1 << 18
	planeSeed           = 0x72656c6179736331 // "relaysc1"
)

// semPrefix starts every semantic cache key.
const semPrefix = "relay:sc:"

// Partition is the semantic cache's partition of request c in domain
// domain for the catalog model model, embedded by embedModel: the scope in
// clear (purges match it), then a digest of everything but the last user
// turn — system prompt, earlier turns, tools, parameters — so only
// requests that differ by their last user turn share one. It returns the
// text of that turn; ok is false when the request has none (the last
// message is not the user's, or holds more than text).
func Partition(s Scope, domain string, model, embedModel snapshot.ID, c *canonical.Request) (part, text string, ok bool, err error) {
	n := len(c.Messages)
	if n == 0 || c.Messages[n-1].Role != canonical.RoleUser {
		return "", "", false, nil
	}
	last := c.Messages[n-1].Parts
	for i := range last {
		if last[i].Type != canonical.PartText {
			return "", "", false, nil
		}
	}
	text = canonical.TextOf(last, "\n")
	if text == "" {
		return "", "", false, nil
	}
	rest := *c
	rest.Messages = c.Messages[:n-1]
	sum, err := digest(model, &rest)
	if err != nil {
		return "", "", false, err
	}
	scope := prefixOf(semPrefix, s)
	h := sha256.New()
	h.Write([]byte(scope))
	h.Write(sum[:])
	h.Write(embedModel[:])
	h.Write([]byte(domain))
	p := h.Sum(nil)
	// The braces are a Redis Cluster hash tag: a partition's keys share a
	// slot, so one script reads them; the scope is in the digest, so the
	// partitions of one domain spread over the slots by tenant.
	return scope + domain + ":{" + hex.EncodeToString(p[:16]) + "}", text, true, nil
}

// SystemDigest is the SHA-256 of a system prompt as a domain's
// system_sha256 names it: its text parts joined by newlines.
func SystemDigest(system []canonical.Part) [sha256.Size]byte {
	return sha256.Sum256([]byte(canonical.TextOf(system, "\n")))
}

// SemanticPolicyPattern matches every semantic entry of a policy.
func SemanticPolicyPattern(policy snapshot.ID) string { return semPrefix + policy.String() + ":*" }

// SemanticRelayKeyPattern matches every semantic entry scoped to one relay key.
func SemanticRelayKeyPattern(key snapshot.ID) string {
	return semPrefix + "*:*:" + string(snapshot.CacheScopeRelayKey) + ":" + key.String() + ":*"
}

// Candidate is an entry a lookup's buckets name, with its stored vector.
type Candidate struct {
	ID  string
	Vec []byte // Quantize's
}

// Index keeps the semantic cache's entries: each under its partition and
// id, named by its buckets, with its vector.
type Index interface {
	// Candidates returns the live entries of partition part that the
	// buckets name, with their vectors, in one round trip.
	Candidates(ctx context.Context, part string, buckets []string) ([]Candidate, error)
	// Populated reports whether partition part may hold a live entry:
	// a false answer is certain, a true one may name entries that have
	// just expired.
	Populated(ctx context.Context, part string) (bool, error)
	// Get returns entry id's value, or ErrMiss.
	Get(ctx context.Context, part, id string) ([]byte, error)
	// Put keeps val and vec as entry id for ttl, named by buckets.
	Put(ctx context.Context, part, id string, buckets []string, vec, val []byte, ttl time.Duration) error
	// Purge deletes the partitions whose keys match the glob pattern and
	// returns how many keys it deleted.
	Purge(ctx context.Context, pattern string) (int, error)
}

// SemanticHit is a semantic lookup's answer.
type SemanticHit struct {
	Entry *Entry
	// ID names the matched entry: the request id that produced it.
	ID         string
	Similarity float64
}

// planes are the hyperplanes for one vector size.
type planes struct {
	w [][]float32 // Bands*Bits rows
}

// Semantic reads and fills the semantic cache in an Index.
type Semantic struct {
	index   Index
	now     func() time.Time
	timeout time.Duration

	mu     sync.Mutex
	planes map[int]*planes // by vector size

	hits, misses, fills, errs atomic.Int64
}

// NewSemantic returns a semantic cache over index (nil: a Memory index of
// 64 MiB).
func NewSemantic(index Index, now func() time.Time, timeout time.Duration) *Semantic {
	if now == nil {
		now = time.Now
	}
	if index == nil {
		index = NewMemoryIndex(0, now)
	}
	if timeout <= 0 {
		timeout = 100 * time.Millisecond
	}
	return &Semantic{index: index, now: now, timeout: timeout, planes: map[int]*planes{}}
}

func (s *Semantic) planesFor(dims int) *planes {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.planes[dims]; p != nil {
		return p
	}
	r := rand.New(rand.NewPCG(planeSeed, uint64(dims)))
	p := &planes{w: make([][]float32, Bands*Bits)}
	for i := range p.w {
		row := make([]float32, dims)
		for j := range row {
			row[j] = float32(r.NormFloat64())
		}
		p.w[i] = row
	}
	if len(s.planes) < 16 {
		s.planes[dims] = p
	}
	return p
}

// Buckets returns the buckets vector v falls in (one per band) followed,
// when probe is set, by those one flip away on each band's Probes least
// certain bits.
func (s *Semantic) Buckets(v []float32, probe bool) []string {
	p := s.planesFor(len(v))
	n := Bands
	if probe {
		n *= 1 + Probes
	}
	out := make([]string, 0, n)
	var proj [Bits]float32
	var order [Bits]int
	for b := range Bands {
		code := uint32(0)
		for i := range Bits {
			w := p.w[b*Bits+i]
			var d float32
			for j, x := range v {
				d += w[j] * x
			}
			proj[i] = d
			if d > 0 {
				code |= 1 << i
			}
		}
		out = append(out, bucket(b, code))
		if !probe {
			continue
		}
		for i := range order {
			order[i] = i
		}
		sort.Slice(order[:], func(i, j int) bool { return abs32(proj[order[i]]) < abs32(proj[order[j]]) })
		for _, i := range order[:Probes] {
			out = append(out, bucket(b, code^1<<i))
		}
	}
	return out
}

func bucket(band int, code uint32) string {
	return strconv.Itoa(band) + ":" + strconv.FormatUint(uint64(code), 16)
}

func abs32(f float32) float32 {
	if f < 0 {
		return -f
	}
	return f
}

// Quantize is v as the index keeps it: one signed byte a dimension, scaled
// so the largest magnitude is 127. Cosine does not depend on the scale.
func Quantize(v []float32) []byte {
	var m float32
	for _, x := range v {
		m = max(m, abs32(x))
	}
	out := make([]byte, len(v))
	if m == 0 {
		return out
	}
	k := 127 / m
	for i, x := range v {
		out[i] = byte(int8(math.Round(float64(x * k))))
	}
	return out
}

// Cosine is the cosine similarity of v and a quantized vector q (0 when
// their sizes differ or either is zero).
func Cosine(v []float32, q []byte) float64 {
	if len(v) != len(q) {
		return 0
	}
	var dot, nv, nq float64
	for i, x := range v {
		y := float64(int8(q[i]))
		dot += float64(x) * y
		nv += float64(x) * float64(x)
		nq += y * y
	}
	if nv == 0 || nq == 0 {
		return 0
	}
	return dot / math.Sqrt(nv*nq)
}

// Nearest returns the candidate most similar to v, and its similarity.
func Nearest(v []float32, cs []Candidate) (string, float64) {
	best, sim := "", -2.0
	for i := range cs {
		if c := Cosine(v, cs[i].Vec); c > sim {
			best, sim = cs[i].ID, c
		}
	}
	return best, sim
}

// Lookup returns the entry of partition part nearest to v, when it is at
// least threshold similar. A store error is a miss (and an error).
func (s *Semantic) Lookup(ctx context.Context, part string, v []float32, threshold float64) (*SemanticHit, bool) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	cs, err := s.index.Candidates(ctx, part, s.Buckets(v, true))
	if err != nil {
		s.errs.Add(1)
		s.misses.Add(1)
		return nil, false
	}
	id, sim := Nearest(v, cs)
	if id == "" || sim < threshold {
		s.misses.Add(1)
		return nil, false
	}
	b, err := s.index.Get(ctx, part, id)
	var e Entry
	if err == nil {
		err = json.Unmarshal(b, &e)
	}
	if err != nil {
		if !errors.Is(err, ErrMiss) {
			s.errs.Add(1)
		}
		s.misses.Add(1)
		return nil, false
	}
	s.hits.Add(1)
	return &SemanticHit{Entry: &e, ID: id, Similarity: sim}, true
}

// Populated reports whether partition part may hold an entry to look
// up, in one round trip: a request whose partition is empty need not be
// embedded before it goes upstream. An empty partition counts as a
// lookup's miss; a store error is an empty partition (and an error): the
// lookup would fail too.
func (s *Semantic) Populated(ctx context.Context, part string) bool {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ok, err := s.index.Populated(ctx, part)
	if err != nil {
		s.errs.Add(1)
	}
	if !ok {
		s.misses.Add(1)
	}
	return ok
}

// Fill keeps e as entry id of partition part under vector v for ttl,
// unless its encoding is larger than maxBytes; it reports whether it was
// kept.
func (s *Semantic) Fill(ctx context.Context, part, id string, v []float32, e *Entry, ttl time.Duration, maxBytes int) bool {
	if e.StoredAt.IsZero() {
		e.StoredAt = s.now()
	}
	b, err := json.Marshal(e)
	if err != nil || maxBytes > 0 && len(b) > maxBytes {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := s.index.Put(ctx, part, id, s.Buckets(v, false), Quantize(v), b, ttl); err != nil {
		s.errs.Add(1)
		return false
	}
	s.fills.Add(1)
	return true
}

// Age is how long ago e was kept.
func (s *Semantic) Age(e *Entry) time.Duration { return max(s.now().Sub(e.StoredAt), 0) }

// SemanticStats are the semantic cache's counters since start.
type SemanticStats struct {
	Hits, Misses, Fills, Errors int64
}

// Stats returns the counters.
func (s *Semantic) Stats() SemanticStats {
	return SemanticStats{Hits: s.hits.Load(), Misses: s.misses.Load(), Fills: s.fills.Load(), Errors: s.errs.Load()}
}

// PurgePolicy deletes every semantic entry of a policy.
func (s *Semantic) PurgePolicy(ctx context.Context, policy snapshot.ID) (int, error) {
	return s.index.Purge(ctx, SemanticPolicyPattern(policy))
}

// PurgeRelayKey deletes the semantic entries scoped to one relay key.
func (s *Semantic) PurgeRelayKey(ctx context.Context, key snapshot.ID) (int, error) {
	return s.index.Purge(ctx, SemanticRelayKeyPattern(key))
}
