package usage

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/relay-llm/relay/internal/store"
)

// DefaultSpoolMaxBytes caps the spool when WriterConfig.SpoolMaxBytes is 0:
// 1 GiB holds over twenty million events (a spilled event takes 25 to 50
// bytes compressed), more than an hour of an outage at 5,000 requests a
// second.
const DefaultSpoolMaxBytes = 1 << 30

// errSpoolFull is a spill refused because the spool is at its cap.
var errSpoolFull = errors.New("usage spool full")

// spool is the writer's on-disk queue of batches Postgres could not take.
// Each batch is one segment file, <seq>-<events>.usage: gzip-compressed JSON
// of its ledger rows, written to a temporary file, fsynced, renamed into
// place and the directory fsynced, so that a segment is either whole on disk
// or absent, whatever happens to the process. Segments are replayed oldest
// (lowest seq) first and removed once stored; replaying one twice is
// harmless, since the ledger skips events it holds (store.IngestUsageEvents).
//
// The writer's goroutines share it: mu guards the fields below it.
type spool struct {
	dir string
	max int64

	mu     sync.Mutex
	segs   []segment // oldest first
	bytes  int64     // their total size
	events int64     // their total events
	next   uint64    // seq of the next segment
}

type segment struct {
	seq    uint64
	size   int64
	events int
}

const segmentExt = ".usage"

func (s segment) name() string {
	return fmt.Sprintf("%020d-%d%s", s.seq, s.events, segmentExt)
}

// openSpool makes dir if need be and takes over the segments a previous
// process left there; temporary files of an interrupted write are removed.
func openSpool(dir string, maxBytes int64) (*spool, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultSpoolMaxBytes
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("make usage spool: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read usage spool: %w", err)
	}
	s := &spool{dir: dir, max: maxBytes}
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, ".tmp") {
			_ = os.Remove(filepath.Join(dir, name))
			continue
		}
		seg, ok := parseSegment(name)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("read usage spool: %w", err)
		}
		seg.size = info.Size()
		s.segs = append(s.segs, seg)
		s.bytes += seg.size
		s.events += int64(seg.events)
		s.next = max(s.next, seg.seq+1)
	}
	slices.SortFunc(s.segs, func(a, b segment) int { return cmpU64(a.seq, b.seq) })
	return s, nil
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func parseSegment(name string) (segment, bool) {
	base, ok := strings.CutSuffix(name, segmentExt)
	if !ok {
		return segment{}, false
	}
	seqText, eventsText, ok := strings.Cut(base, "-")
	if !ok {
		return segment{}, false
	}
	seq, err1 := strconv.ParseUint(seqText, 10, 64)
	events, err2 := strconv.Atoi(eventsText)
	if err1 != nil || err2 != nil || events < 0 {
		return segment{}, false
	}
	return segment{seq: seq, events: events}, true
}

// pending reports whether segments wait for replay.
func (s *spool) pending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.segs) > 0
}

// size returns the spool's bytes and events.
func (s *spool) size() (bytes, events int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes, s.events
}

// spill writes rows as the newest segment and returns once it is durable.
// It refuses with errSpoolFull when the segment would take the spool past
// its cap.
func (s *spool) spill(rows []store.UsageEvent) error {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(rows); err != nil {
		return fmt.Errorf("encode usage segment: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("encode usage segment: %w", err)
	}
	s.mu.Lock()
	if s.bytes+int64(buf.Len()) > s.max {
		s.mu.Unlock()
		return errSpoolFull
	}
	// Reserve the room and the seq; only this goroutine writes this file.
	seg := segment{seq: s.next, size: int64(buf.Len()), events: len(rows)}
	s.next++
	s.bytes += seg.size
	s.mu.Unlock()

	if err := s.writeFile(seg.name(), buf.Bytes()); err != nil {
		s.mu.Lock()
		s.bytes -= seg.size
		s.mu.Unlock()
		return err
	}
	s.mu.Lock()
	s.events += int64(seg.events)
	// Segments are appended in seq order but spills may finish out of
	// order: keep the list sorted.
	i, _ := slices.BinarySearchFunc(s.segs, seg, func(a, b segment) int { return cmpU64(a.seq, b.seq) })
	s.segs = slices.Insert(s.segs, i, seg)
	s.mu.Unlock()
	return nil
}

func (s *spool) writeFile(name string, data []byte) error {
	final := filepath.Join(s.dir, name)
	tmp := final + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		// The directory may have been removed under us: make it again once.
		if mkErr := os.MkdirAll(s.dir, 0o700); mkErr != nil {
			return fmt.Errorf("write usage segment: %w", err)
		}
		if f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
			return fmt.Errorf("write usage segment: %w", err)
		}
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err == nil {
		err = syncDir(s.dir)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write usage segment: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// oldest returns the oldest segments, as many as hold up to maxEvents
// events (at least one), and their rows in order. A segment that cannot be
// read back (damaged on disk) comes alone, with nil rows and the error.
func (s *spool) oldest(maxEvents int) ([]segment, []store.UsageEvent, error) {
	s.mu.Lock()
	var segs []segment
	total := 0
	for _, seg := range s.segs {
		if len(segs) > 0 && total+seg.events > maxEvents {
			break
		}
		segs = append(segs, seg)
		total += seg.events
	}
	s.mu.Unlock()
	rows := make([]store.UsageEvent, 0, total)
	for i, seg := range segs {
		var err error
		rows, err = s.read(seg, rows)
		if err != nil {
			if i == 0 {
				return segs[:1], nil, err
			}
			// Replay those before it; the damaged one comes next time.
			return segs[:i], rows, nil
		}
	}
	return segs, rows, nil
}

// read appends the rows of seg to rows.
func (s *spool) read(seg segment, rows []store.UsageEvent) ([]store.UsageEvent, error) {
	data, err := os.ReadFile(filepath.Join(s.dir, seg.name()))
	if err != nil {
		return rows, fmt.Errorf("read usage segment %s: %w", seg.name(), err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return rows, fmt.Errorf("read usage segment %s: %w", seg.name(), err)
	}
	var these []store.UsageEvent
	if err := json.NewDecoder(zr).Decode(&these); err != nil {
		return rows, fmt.Errorf("read usage segment %s: %w", seg.name(), err)
	}
	for i := range these {
		// An absent decision was written as null, which decodes as the
		// JSON text null: the ledger keeps SQL NULL for it.
		if string(these[i].RouteDetail) == "null" {
			these[i].RouteDetail = nil
		}
	}
	return append(rows, these...), nil
}

// remove deletes a segment once its events are stored (or given up).
func (s *spool) remove(seg segment) error {
	err := os.Remove(filepath.Join(s.dir, seg.name()))
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	s.mu.Lock()
	if i := slices.IndexFunc(s.segs, func(x segment) bool { return x.seq == seg.seq }); i >= 0 {
		s.segs = slices.Delete(s.segs, i, i+1)
		s.bytes -= seg.size
		s.events -= int64(seg.events)
	}
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("remove usage segment %s: %w", seg.name(), err)
	}
	return nil
}
