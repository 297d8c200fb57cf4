package cache

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/snapshot"
)

func unit(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	k := float32(1 / math.Sqrt(n))
	for i := range v {
		v[i] *= k
	}
	return v
}

func randomUnit(r *rand.Rand, dims int) []float32 {
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return unit(v)
}

// near is a unit vector at cosine about sim from v.
func near(r *rand.Rand, v []float32, sim float64) []float32 {
	n := randomUnit(r, len(v))
	// Remove n's component along v, then mix.
	var d float32
	for i := range v {
		d += v[i] * n[i]
	}
	for i := range n {
		n[i] -= d * v[i]
	}
	n = unit(n)
	out := make([]float32, len(v))
	s, c := float32(math.Sqrt(1-sim*sim)), float32(sim)
	for i := range v {
		out[i] = c*v[i] + s*n[i]
	}
	return out
}

// semanticContract holds an Index to its meaning through Semantic: a near
// vector finds its entry above the threshold, a far one does not, another
// partition never does, a purge removes the policy's.
func semanticContract(t *testing.T, idx Index) {
	ctx := context.Background()
	s := NewSemantic(idx, nil, time.Second)
	r := rand.New(rand.NewPCG(1, 2))
	req := request()
	pa, text, ok, err := Partition(Scope{Policy: policyA, Project: projectA}, "faq", modelA, modelB, req)
	if err != nil || !ok || text != "hi" {
		t.Fatalf("partition: %q %v %v", text, ok, err)
	}
	pb, _, _, _ := Partition(Scope{Policy: policyA, Project: projectB}, "faq", modelA, modelB, req)
	if pa == pb {
		t.Fatal("two projects share a partition")
	}
	if s.Populated(ctx, pa) {
		t.Fatal("an empty partition is populated")
	}
	v := randomUnit(r, 256)
	for i := range 50 { // neighbours that are not it
		if !s.Fill(ctx, pa, "other"+string(rune('a'+i%26))+string(rune('a'+i/26)), randomUnit(r, 256), &Entry{}, time.Minute, 0) {
			t.Fatal("fill")
		}
	}
	e := &Entry{Response: canonical.Response{ID: "answer", Parts: []canonical.Part{{Type: canonical.PartText, Text: "hello"}}}}
	if !s.Fill(ctx, pa, "req_1", v, e, time.Minute, 0) {
		t.Fatal("fill")
	}
	if !s.Populated(ctx, pa) || s.Populated(ctx, pb) {
		t.Fatalf("populated: the filled partition %v, another project's %v", s.Populated(ctx, pa), s.Populated(ctx, pb))
	}
	hit, ok := s.Lookup(ctx, pa, near(r, v, 0.97), 0.9)
	if !ok || hit.ID != "req_1" || hit.Entry.Response.ID != "answer" || hit.Similarity < 0.95 || hit.Similarity > 0.99 {
		t.Fatalf("near lookup: %+v %v", hit, ok)
	}
	if hit, ok := s.Lookup(ctx, pa, near(r, v, 0.8), 0.9); ok {
		t.Errorf("a lookup below the threshold hit: %+v", hit)
	}
	if hit, ok := s.Lookup(ctx, pb, v, 0.5); ok {
		t.Errorf("another project's partition hit: %+v", hit)
	}
	if n, err := s.PurgePolicy(ctx, policyA); err != nil || n != 51 {
		t.Errorf("purge: %d %v", n, err)
	}
	if _, ok := s.Lookup(ctx, pa, v, 0.5); ok {
		t.Error("a purged entry hit")
	}
	if s.Populated(ctx, pa) {
		t.Error("a purged partition is populated")
	}
}

func TestMemoryIndex_Contract(t *testing.T) { semanticContract(t, NewMemoryIndex(0, nil)) }

func TestRedisIndex_Contract(t *testing.T) {
	client := redistest.Client(t, redistest.URL(t))
	semanticContract(t, NewRedisIndex(client, redistest.Prefix(t)))
}

func TestMemoryIndex_Expires(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{t: time.Unix(1000, 0)}
	s := NewSemantic(NewMemoryIndex(0, clock.now), clock.now, 0)
	v := unit([]float32{1, 2, 3, 4})
	s.Fill(ctx, "p", "a", v, &Entry{}, time.Second, 0)
	if _, ok := s.Lookup(ctx, "p", v, 0.99); !ok {
		t.Fatal("miss before expiry")
	}
	clock.advance(2 * time.Second)
	if _, ok := s.Lookup(ctx, "p", v, 0.5); ok {
		t.Error("an expired entry hit")
	}
	if s.Populated(ctx, "p") {
		t.Error("a partition of expired entries is populated")
	}
}

func TestPartition_OnlyTheLastUserTurnIsLeftOut(t *testing.T) {
	s := Scope{Policy: policyA, Project: projectA}
	a, _, _, _ := Partition(s, "d", modelA, modelB, request())
	r := request()
	r.Messages[0].Parts[0].Text = "something else entirely"
	b, text, ok, _ := Partition(s, "d", modelA, modelB, r)
	if a != b || text != "something else entirely" || !ok {
		t.Errorf("the last turn changed the partition: %s %s", a, b)
	}
	r.System = nil
	if c, _, _, _ := Partition(s, "d", modelA, modelB, r); c == a {
		t.Error("the system prompt does not change the partition")
	}
	if c, _, _, _ := Partition(s, "e", modelA, modelB, request()); c == a {
		t.Error("the domain does not change the partition")
	}
	r = request()
	r.Messages = append(r.Messages, canonical.Message{Role: canonical.RoleAssistant, Parts: r.Messages[0].Parts})
	if _, _, ok, _ := Partition(s, "d", modelA, modelB, r); ok {
		t.Error("a request that does not end with the user's turn has a partition")
	}
}

// hashTag is the Redis Cluster hash tag of a key: what its slot is
// computed on.
func hashTag(key string) string {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return key
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return key
	}
	return key[i+1 : i+1+j]
}

// TestPartition_HashTagHoldsTheScope: the same request of two projects, or
// of two relay keys, lands in partitions whose hash tags differ, so a
// popular domain's partitions spread over a cluster's slots.
func TestPartition_HashTagHoldsTheScope(t *testing.T) {
	base := Scope{Policy: policyA, Project: projectA}
	seen := map[string]Scope{}
	for _, s := range []Scope{base, {Policy: policyA, Project: projectB},
		{Policy: policyA, Project: projectA, Kind: snapshot.CacheScopeRelayKey, Value: "k1"},
		{Policy: policyA, Project: projectA, Kind: snapshot.CacheScopeRelayKey, Value: "k2"}} {
		p, _, ok, err := Partition(s, "d", modelA, modelB, request())
		if err != nil || !ok {
			t.Fatalf("%+v: %v %v", s, ok, err)
		}
		tag := hashTag(p)
		if tag == p {
			t.Fatalf("no hash tag in %s", p)
		}
		if o, dup := seen[tag]; dup {
			t.Errorf("scopes %+v and %+v share hash tag %s", o, s, tag)
		}
		seen[tag] = s
	}
}
