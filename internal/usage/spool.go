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

// DefaultSpoolMaxBytes caps the spool (the journal included) when
// WriterConfig.SpoolMaxBytes is 0: 1 GiB holds about five million events
// with a full routing decision (about 200 bytes each in the journal's
// binary records) and far more with its short form (docs/usage.md).
const DefaultSpoolMaxBytes = 1 << 30

// errSpoolFull is an event refused because the spool is at its cap.
var errSpoolFull = errors.New("usage spool full")

// spool is the writer's on-disk store of events Postgres has not taken: the
// journal segments (journal.go) that hold marked events, replayed oldest
// (lowest seq) first and removed once stored. Replaying one twice is
// harmless, since the ledger skips events it holds
// (store.IngestUsageEvents). It also replays the gzip-compressed JSON
// segments (<seq>-<events>.usage) an older Relay spilled.
//
// The writer's goroutines share it: mu guards the fields below it.
type spool struct {
	dir string
	max int64

	mu     sync.Mutex
	segs   []segment // oldest first
	bytes  int64     // their total size
	events int64     // their total events to replay
	next   uint64    // seq of the next segment
}

type segment struct {
	seq    uint64
	size   int64
	events int // to replay
	// journal: a journal segment; marks says which of its records are to
	// be replayed (nil: all).
	journal bool
	marks   []uint64
}

const (
	segmentExt = ".usage"
	journalExt = ".journal"
	marksExt   = ".replay"
)

func (s segment) name() string {
	if s.journal {
		return journalName(s.seq)
	}
	return fmt.Sprintf("%020d-%d%s", s.seq, s.events, segmentExt)
}

// openSpool makes dir if need be and takes over the segments a previous
// process left there; temporary files of an interrupted write are removed.
// A journal segment without valid marks is counted record by record: the
// process that wrote it died while it was in use.
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
		if !e.Type().IsRegular() {
			continue
		}
		seg, ok := parseSegment(name)
		if !ok {
			seg, ok = s.parseJournal(name)
		}
		if !ok {
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

// parseJournal takes over a journal segment: with its marks when they check
// out, else whole.
func (s *spool) parseJournal(name string) (segment, bool) {
	base, ok := strings.CutSuffix(name, journalExt)
	if !ok {
		return segment{}, false
	}
	seq, err := strconv.ParseUint(base, 10, 64)
	if err != nil {
		return segment{}, false
	}
	seg := segment{seq: seq, journal: true}
	if b, err := os.ReadFile(filepath.Join(s.dir, marksName(seq))); err == nil {
		if marks, ok := decodeMarks(b); ok {
			seg.marks = marks
			seg.events = popcount(marks)
			return seg, true
		}
	}
	data, err := os.ReadFile(filepath.Join(s.dir, name))
	if err != nil {
		return segment{}, false
	}
	seg.events = countRecords(data)
	return seg, true
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

// bytesNow is the spool's size.
func (s *spool) bytesNow() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// takeSeq reserves the seq of a new segment.
func (s *spool) takeSeq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	seq := s.next
	s.next++
	return seq
}

// add takes over a segment whose file is durable.
func (s *spool) add(seg segment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bytes += seg.size
	s.events += int64(seg.events)
	// Segments are sealed in seq order but may be finished out of order:
	// keep the list sorted.
	i, _ := slices.BinarySearchFunc(s.segs, seg, func(a, b segment) int { return cmpU64(a.seq, b.seq) })
	s.segs = slices.Insert(s.segs, i, seg)
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
// events (at least one), their rows in order, and how many of their events
// could not be read back (a torn or damaged record: lost). A segment that
// cannot be read at all comes alone, with nil rows and the error.
func (s *spool) oldest(maxEvents int) ([]segment, []store.UsageEvent, int, error) {
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
	lost := 0
	for i, seg := range segs {
		before := len(rows)
		var err error
		rows, err = s.read(seg, rows)
		if err != nil {
			if i == 0 {
				return segs[:1], nil, 0, err
			}
			// Replay those before it; the damaged one comes next time.
			return segs[:i], rows[:before], lost, nil
		}
		lost += max(seg.events-(len(rows)-before), 0)
	}
	return segs, rows, lost, nil
}

// read appends the rows of seg to rows.
func (s *spool) read(seg segment, rows []store.UsageEvent) ([]store.UsageEvent, error) {
	data, err := os.ReadFile(filepath.Join(s.dir, seg.name()))
	if err != nil {
		return rows, fmt.Errorf("read usage segment %s: %w", seg.name(), err)
	}
	if seg.journal {
		rows, _ = readJournal(data, seg.marks, rows)
		return rows, nil
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
	if seg.journal {
		if merr := os.Remove(filepath.Join(s.dir, marksName(seg.seq))); err == nil && !errors.Is(merr, os.ErrNotExist) {
			err = merr
		}
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
