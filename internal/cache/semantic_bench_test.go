package cache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/redistest"
)

// semBenchDims is the vector size of the benchmark (Gemini's
// text-embedding-004, OpenAI's text-embedding-3 at 768).
const semBenchDims = 768

// semCorpus is n stored vectors in 1000 topics (a vector's cosine to its
// topic's centre is about 0.7, to another of its topic about 0.5) and
// queries, each a paraphrase of a random stored vector at a cosine drawn
// from [0.86, 0.98], with the brute-force answer at the threshold 0.9.
type semCorpus struct {
	vecs    [][]float32
	queries [][]float32
	truth   []int // index of the exact nearest at or above 0.9, or -1
}

func newSemCorpus(n, queries int) *semCorpus {
	r := rand.New(rand.NewPCG(7, uint64(n)))
	centres := make([][]float32, 1000)
	for i := range centres {
		centres[i] = randomUnit(r, semBenchDims)
	}
	c := &semCorpus{vecs: make([][]float32, n)}
	for i := range c.vecs {
		c.vecs[i] = near(r, centres[r.IntN(len(centres))], 0.7)
	}
	for range queries {
		c.queries = append(c.queries, near(r, c.vecs[r.IntN(n)], 0.86+0.12*r.Float64()))
	}
	// The truth is brute force over the float vectors (all unit length).
	c.truth = make([]int, queries)
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for qi := w; qi < queries; qi += 2 {
				v := c.queries[qi]
				best, sim := -1, float32(0.9)
				for i, x := range c.vecs {
					var d float32
					for j := range x {
						d += x[j] * v[j]
					}
					if d >= sim {
						best, sim = i, d
					}
				}
				c.truth[qi] = best
			}
		})
	}
	wg.Wait()
	return c
}

func semFill(b *testing.B, s *Semantic, part string, c *semCorpus) {
	var wg sync.WaitGroup
	ch := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range ch {
				if !s.Fill(context.Background(), part, "e"+strconv.Itoa(i), c.vecs[i], &Entry{}, time.Hour, 0) {
					b.Error("fill failed")
				}
			}
		})
	}
	for i := range c.vecs {
		ch <- i
	}
	close(ch)
	wg.Wait()
}

// BenchmarkSemanticLookup is one lookup (buckets, candidates with their
// vectors, rerank; a hit also reads its entry) in a partition of 10k and
// 100k entries, in memory and in Redis. recall% is how often it finds the
// entry brute force finds at the threshold (0.9); cands is the candidates
// a lookup reranks.
func BenchmarkSemanticLookup(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		var c *semCorpus
		for _, where := range []string{"memory", "redis"} {
			b.Run(fmt.Sprintf("%s/%dk", where, n/1000), func(b *testing.B) {
				if c == nil {
					c = newSemCorpus(n, 200)
				}
				var idx Index = NewMemoryIndex(1<<30, nil)
				if where == "redis" {
					client := redistest.Client(b, redistest.URL(b))
					ri := NewRedisIndex(client, redistest.Prefix(b))
					b.Cleanup(func() { _, _ = ri.Purge(context.Background(), semPrefix+"*") })
					idx = ri
				}
				s := NewSemantic(idx, nil, 10*time.Second)
				const part = semPrefix + "bench:p:project::d:{x}"
				semFill(b, s, part, c)
				found, want, cands := 0, 0, 0
				for i, q := range c.queries {
					cs, err := idx.Candidates(context.Background(), part, s.Buckets(q, true))
					if err != nil {
						b.Fatal(err)
					}
					cands += len(cs)
					if c.truth[i] < 0 {
						continue
					}
					want++
					if id, sim := Nearest(q, cs); sim >= 0.9 && id == "e"+strconv.Itoa(c.truth[i]) {
						found++
					}
				}
				b.ResetTimer()
				i := 0
				for b.Loop() {
					s.Lookup(context.Background(), part, c.queries[i%len(c.queries)], 0.9)
					i++
				}
				b.ReportMetric(100*float64(found)/float64(max(want, 1)), "recall%")
				b.ReportMetric(float64(cands)/float64(len(c.queries)), "cands")
			})
		}
	}
}
