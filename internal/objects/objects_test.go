package objects

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/snapshot"
)

// theCluster is the package's Redis Cluster, stopped by TestMain.
var theCluster redistest.SharedCluster

func TestMain(m *testing.M) {
	code := m.Run()
	theCluster.Stop()
	os.Exit(code)
}

// clock is a settable clock shared by a test's indexes.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newIndex makes one "pod"'s index; every call of one test shares the
// index's backing store (one Memory, or one Redis under one prefix).
type newIndex func(opts Options) Index

// onEachIndex runs test on Memory, on one Redis and on a Redis Cluster.
func onEachIndex(t *testing.T, test func(t *testing.T, pod newIndex)) {
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		var once sync.Once
		var m *Memory
		test(t, func(opts Options) Index {
			once.Do(func() { m = NewMemory(opts) })
			return m
		})
	})
	onRedis := func(t *testing.T, client func(t *testing.T) redis.UniversalClient) {
		prefix := redistest.Prefix(t)
		test(t, func(opts Options) Index { return NewRedis(client(t), prefix, opts) })
	}
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		url := redistest.URL(t)
		onRedis(t, func(t *testing.T) redis.UniversalClient { return redistest.Client(t, url) })
	})
	t.Run("redis-cluster", func(t *testing.T) {
		t.Parallel()
		cluster := theCluster.Get(t)
		onRedis(t, func(t *testing.T) redis.UniversalClient { return cluster.Client(t) })
	})
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func obj(project snapshot.ID, kind Kind, id string, at time.Time) Object {
	return Object{
		ID: id, Kind: kind, ProjectID: project, HostID: uuid.UUID{9}, HostKeyID: uuid.UUID{7},
		CreatedAt: at, Size: 42, Attrs: map[string]string{"purpose": "batch"},
	}
}

func ids(os []Object) []string {
	out := make([]string, len(os))
	for i, o := range os {
		out[i] = o.ID
	}
	return out
}

func TestIndex_OtherProjectGetsTheMissingAnswer(t *testing.T) {
	t.Parallel()
	onEachIndex(t, func(t *testing.T, pod newIndex) {
		clk := &clock{t: t0}
		a, b := pod(Options{Now: clk.Now}), pod(Options{Now: clk.Now}) // two pods
		mine, theirs := uuid.New(), uuid.New()
		ctx := t.Context()
		if err := a.Put(ctx, obj(mine, KindFile, "file-abc", t0)); err != nil {
			t.Fatal(err)
		}
		got, err := b.Get(ctx, mine, KindFile, "file-abc")
		if err != nil {
			t.Fatalf("the other pod: Get = %v", err)
		}
		want := obj(mine, KindFile, "file-abc", t0)
		if got.HostKeyID != want.HostKeyID || got.HostID != want.HostID || got.Size != 42 || !got.CreatedAt.Equal(t0) || got.Attrs["purpose"] != "batch" {
			t.Fatalf("Get = %+v, want %+v", got, want)
		}
		for name, call := range map[string]func() error{
			"get theirs":  func() error { _, err := b.Get(ctx, theirs, KindFile, "file-abc"); return err },
			"get missing": func() error { _, err := b.Get(ctx, mine, KindFile, "file-nope"); return err },
			"other kind":  func() error { _, err := b.Get(ctx, mine, KindBatch, "file-abc"); return err },
			"delete":      func() error { return b.Delete(ctx, theirs, KindFile, "file-abc") },
			"claim":       func() error { _, err := b.Claim(ctx, theirs, KindFile, "file-abc", "usage"); return err },
		} {
			if err := call(); !errors.Is(err, ErrNotFound) {
				t.Errorf("%s: err = %v, want ErrNotFound", name, err)
			}
		}
		if l, more, err := b.List(ctx, theirs, KindFile, Page{}); err != nil || len(l) != 0 || more {
			t.Errorf("their list = %v, %v, %v; want empty", ids(l), more, err)
		}
		// Still there for its owner after their delete.
		if _, err := a.Get(ctx, mine, KindFile, "file-abc"); err != nil {
			t.Fatalf("after their delete: %v", err)
		}
		if err := b.Delete(ctx, mine, KindFile, "file-abc"); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Get(ctx, mine, KindFile, "file-abc"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("after delete: Get = %v", err)
		}
		if err := a.Delete(ctx, mine, KindFile, "file-abc"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second delete = %v", err)
		}
	})
}

func TestIndex_ListsNewestFirstInPages(t *testing.T) {
	t.Parallel()
	onEachIndex(t, func(t *testing.T, pod newIndex) {
		clk := &clock{t: t0.Add(time.Hour)}
		x := pod(Options{Now: clk.Now})
		p, other := uuid.New(), uuid.New()
		ctx := t.Context()
		for i := range 5 {
			if err := x.Put(ctx, obj(p, KindBatch, fmt.Sprintf("batch_%d", i), t0.Add(time.Duration(i)*time.Minute))); err != nil {
				t.Fatal(err)
			}
		}
		if err := x.Put(ctx, obj(other, KindBatch, "batch_other", t0)); err != nil {
			t.Fatal(err)
		}
		pages := func(asc bool) []string {
			var got []string
			after := ""
			for pages := 0; ; pages++ {
				l, more, err := x.List(ctx, p, KindBatch, Page{After: after, Limit: 2, Asc: asc})
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ids(l)...)
				if !more {
					break
				}
				if pages > 5 {
					t.Fatal("list never ends")
				}
				after = l[len(l)-1].ID
			}
			return got
		}
		want := []string{"batch_4", "batch_3", "batch_2", "batch_1", "batch_0"}
		if got := pages(false); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("pages = %v, want %v", got, want)
		}
		slices.Reverse(want)
		if got := pages(true); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("pages oldest first = %v, want %v", got, want)
		}
		if l, _, _ := x.List(ctx, p, KindBatch, Page{After: "batch_unknown"}); len(l) != 0 {
			t.Fatalf("after an unknown id: %v", ids(l))
		}
	})
}

func TestIndex_RetentionIsBounded(t *testing.T) {
	t.Parallel()
	onEachIndex(t, func(t *testing.T, pod newIndex) {
		clk := &clock{t: t0}
		x := pod(Options{Now: clk.Now, Retention: time.Hour, MaxPerKind: 3})
		p := uuid.New()
		ctx := t.Context()
		for i := range 5 {
			if err := x.Put(ctx, obj(p, KindFile, fmt.Sprintf("file-%d", i), t0.Add(time.Duration(i)*time.Second))); err != nil {
				t.Fatal(err)
			}
		}
		l, _, err := x.List(ctx, p, KindFile, Page{})
		if err != nil || fmt.Sprint(ids(l)) != "[file-4 file-3 file-2]" {
			t.Fatalf("past the count: %v, %v", ids(l), err)
		}
		if _, err := x.Get(ctx, p, KindFile, "file-0"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the oldest past the count: Get = %v", err)
		}
		clk.Add(time.Hour + 3500*time.Millisecond) // file-2 and file-3 are past retention
		l, _, err = x.List(ctx, p, KindFile, Page{})
		if err != nil || fmt.Sprint(ids(l)) != "[file-4]" {
			t.Fatalf("past retention: %v, %v", ids(l), err)
		}
		if _, err := x.Get(ctx, p, KindFile, "file-3"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("expired: Get = %v", err)
		}
	})
}

func TestIndex_ClaimOnceAcrossPods(t *testing.T) {
	t.Parallel()
	onEachIndex(t, func(t *testing.T, pod newIndex) {
		clk := &clock{t: t0}
		a, b := pod(Options{Now: clk.Now}), pod(Options{Now: clk.Now})
		p := uuid.New()
		ctx := t.Context()
		if err := a.Put(ctx, obj(p, KindBatch, "batch_1", t0)); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wins := make(chan bool, 8)
		for i := range 8 {
			wg.Go(func() {
				x := a
				if i%2 == 1 {
					x = b
				}
				ok, err := x.Claim(ctx, p, KindBatch, "batch_1", "usage")
				if err != nil {
					t.Error(err)
				}
				wins <- ok
			})
		}
		wg.Wait()
		close(wins)
		n := 0
		for ok := range wins {
			if ok {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d claims won, want 1", n)
		}
		// A Put that updates the entry keeps its claims.
		if err := b.Put(ctx, obj(p, KindBatch, "batch_1", t0)); err != nil {
			t.Fatal(err)
		}
		if ok, err := a.Claim(ctx, p, KindBatch, "batch_1", "usage"); ok || err != nil {
			t.Fatalf("claim after an update = %v, %v", ok, err)
		}
		if ok, err := a.Claim(ctx, p, KindBatch, "batch_1", "other"); !ok || err != nil {
			t.Fatalf("another mark = %v, %v", ok, err)
		}
	})
}

func TestIndex_RefusesWhatItCannotIndex(t *testing.T) {
	t.Parallel()
	x := NewMemory(Options{})
	good := obj(uuid.New(), KindFile, "file-1", t0)
	for name, mutate := range map[string]func(o *Object){
		"no id":       func(o *Object) { o.ID = "" },
		"long id":     func(o *Object) { o.ID = string(make([]byte, 300)) },
		"kind":        func(o *Object) { o.Kind = "thing" },
		"no project":  func(o *Object) { o.ProjectID = uuid.Nil },
		"no host key": func(o *Object) { o.HostKeyID = uuid.Nil },
	} {
		o := good
		mutate(&o)
		if err := x.Put(t.Context(), o); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Put = %v, want ErrInvalid", name, err)
		}
	}
}

func TestIndex_PendingIsDueOnceAndForgotten(t *testing.T) {
	t.Parallel()
	onEachIndex(t, func(t *testing.T, pod newIndex) {
		clk := &clock{t: t0}
		a, b := pod(Options{Now: clk.Now}), pod(Options{Now: clk.Now})
		ctx := t.Context()
		p := uuid.New()
		b1, b2, b3 := Pending{p, KindBatch, "batch_1"}, Pending{p, KindMessageBatch, "msgbatch_2"}, Pending{p, KindBatch, "batch_3"}
		for i, x := range []Pending{b2, b1, b3} {
			if err := a.Watch(ctx, x, t0.Add(time.Duration(i)*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		// Not yet due: nothing.
		if got, err := b.Due(ctx, t0.Add(-time.Second), time.Minute, 10); err != nil || len(got) != 0 {
			t.Fatalf("due before its time = %v, %v", got, err)
		}
		// Bounded, oldest due first; taken ones are leased away from the other pod.
		got, err := b.Due(ctx, t0.Add(time.Hour), time.Minute, 2)
		if err != nil || len(got) != 2 || got[0] != b2 || got[1] != b1 {
			t.Fatalf("due = %v, %v; want %v %v", got, err, b2, b1)
		}
		if got, err := a.Due(ctx, t0.Add(time.Hour), time.Minute, 10); err != nil || len(got) != 1 || got[0] != b3 {
			t.Fatalf("the other pod's due = %v, %v; want only %v", got, err, b3)
		}
		// After the lease they are due again; unwatched and deleted ones are not.
		if err := a.Unwatch(ctx, b1); err != nil {
			t.Fatal(err)
		}
		if err := a.Put(ctx, obj(p, KindBatch, "batch_3", t0)); err != nil {
			t.Fatal(err)
		}
		if err := a.Delete(ctx, p, KindBatch, "batch_3"); err != nil {
			t.Fatal(err)
		}
		if err := a.Unwatch(ctx, Pending{p, KindBatch, "never"}); err != nil {
			t.Fatal(err)
		}
		if got, err := b.Due(ctx, t0.Add(2*time.Hour), time.Minute, 10); err != nil || len(got) != 1 || got[0] != b2 {
			t.Fatalf("due after the lease = %v, %v; want only %v", got, err, b2)
		}
	})
}
