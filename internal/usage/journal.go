package usage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/bits"
	"os"
	"path/filepath"
	"sync"

	"github.com/relay-llm/relay/internal/store"
)

// journalSegmentEvents is the most events one journal segment holds: its
// replay marks are 512 bytes, and a crash replays at most a few of them.
const journalSegmentEvents = 4096

// The journal is how a killed process loses nothing it answered. Record
// appends every event to the active journal segment (one write(2) of a
// framed record into the page cache, which outlives the process; no fsync)
// before it queues the event, and a segment is removed only once every
// event in it is settled: written to the ledger, or marked for replay.
//
// A segment is the spool too. An event the writer cannot hand to Postgres
// now — the queue is full, the ingester is busy replaying, Postgres failed
// the batch — is not copied anywhere: its bit is set in its segment's
// replay marks. Once a sealed segment has no event left in memory, it is
// removed if nothing in it is marked, or else fsynced, its marks written
// beside it (<seq>.replay) and handed to the spool, which replays the marked
// records and removes both files. A segment found on start without marks
// (the process died while it was in use) is replayed whole: the ledger skips
// the events it already holds (request_id), so nothing is stored twice.
//
// mu guards everything below it; the spool's own lock is taken under it,
// never the other way round.
type journal struct {
	sp *spool

	mu     sync.Mutex
	cur    *jsegment   // the active segment; nil until the next append
	sealed []*jsegment // sealed, some events still in memory
	bytes  int64       // the size of cur and sealed
	marked int64       // marked events in cur and sealed
	buf    []byte      // the record being appended
}

// jsegment is one journal file while the writer still holds some of its
// events in memory.
type jsegment struct {
	seq     uint64
	f       *os.File
	size    int64
	events  int      // records appended
	pending int      // events queued and not yet settled
	marks   []uint64 // bit i: record i is to be replayed
	marked  int
}

func (s *jsegment) mark(i int) {
	if s.marks == nil {
		s.marks = make([]uint64, (journalSegmentEvents+63)/64)
	}
	if s.marks[i/64]&(1<<(i%64)) == 0 {
		s.marks[i/64] |= 1 << (i % 64)
		s.marked++
	}
}

// appendResult is what became of an event Record gave the journal.
type appendResult int

const (
	notJournaled appendResult = iota // the journal could not take it (full, a disk error)
	queued                           // journaled and queued
	spilled                          // journaled and marked: the queue was full
)

func journalName(seq uint64) string { return fmt.Sprintf("%020d%s", seq, journalExt) }
func marksName(seq uint64) string   { return fmt.Sprintf("%020d%s", seq, marksExt) }

// append journals ev and then queues it on ch, or marks it for replay when
// ch is full. It never blocks beyond the write.
func (j *journal) append(ev *Event, ch chan<- *Event) (appendResult, error) {
	row := ev.row()
	j.mu.Lock()
	defer j.mu.Unlock()
	j.buf = appendRecord(j.buf[:0], &row)
	if j.cur != nil && j.cur.events >= journalSegmentEvents {
		j.seal()
	}
	if j.bytes+j.sp.bytesNow()+int64(len(j.buf)) > j.sp.max {
		return notJournaled, errSpoolFull
	}
	if j.cur == nil {
		seq := j.sp.takeSeq()
		f, err := os.OpenFile(filepath.Join(j.sp.dir, journalName(seq)), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
		if err != nil {
			return notJournaled, fmt.Errorf("open usage journal: %w", err)
		}
		j.cur = &jsegment{seq: seq, f: f}
	}
	seg := j.cur
	n, err := seg.f.Write(j.buf)
	seg.size += int64(n)
	j.bytes += int64(n)
	if err != nil {
		// Part of a record may be on disk: nothing may follow it in this
		// segment (a reader stops at it).
		j.seal()
		return notJournaled, fmt.Errorf("write usage journal: %w", err)
	}
	ev.jseg, ev.jidx = seg, int32(seg.events)
	seg.events++
	select {
	case ch <- ev:
		seg.pending++
		return queued, nil
	default:
		seg.mark(int(ev.jidx))
		j.marked++
		return spilled, nil
	}
}

// seal makes the active segment sealed; the next append opens a new one.
// j.mu is held.
func (j *journal) seal() {
	if j.cur != nil {
		j.sealed = append(j.sealed, j.cur)
		j.cur = nil
	}
}

// sealMarked seals the active segment when it holds marked events, so that
// they reach the spool without waiting for the segment to fill.
func (j *journal) sealMarked() {
	j.mu.Lock()
	if j.cur != nil && j.cur.marked > 0 {
		j.seal()
	}
	j.mu.Unlock()
}

// settle takes a batch's events out of memory: with replay set they are
// marked for replay, else they are done with (in the ledger, or given up).
// It returns how many were marked and how many had no journal record (they
// cannot be replayed).
func (j *journal) settle(batch []*Event, replay bool) (marked, unjournaled int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, ev := range batch {
		seg := ev.jseg
		if seg == nil {
			unjournaled++
			continue
		}
		seg.pending--
		if replay {
			before := seg.marked
			seg.mark(int(ev.jidx))
			j.marked += int64(seg.marked - before)
			marked++
		}
	}
	return marked, unjournaled
}

// close seals the active segment; reap then finishes it.
func (j *journal) close() {
	j.mu.Lock()
	j.seal()
	j.mu.Unlock()
}

// reap finishes the sealed segments that hold no event in memory any more:
// removed when nothing in them is marked, else made durable and handed to
// the spool. It runs on the writer's goroutines, never on Record's.
func (j *journal) reap() error {
	j.mu.Lock()
	var done []*jsegment
	keep := j.sealed[:0]
	for _, seg := range j.sealed {
		if seg.pending <= 0 {
			done = append(done, seg)
		} else {
			keep = append(keep, seg)
		}
	}
	clear(j.sealed[len(keep):])
	j.sealed = keep
	j.mu.Unlock()
	var errs []error
	for _, seg := range done {
		if err := j.finish(seg); err != nil {
			errs = append(errs, err)
		}
		j.mu.Lock()
		j.bytes -= seg.size
		j.marked -= int64(seg.marked)
		j.mu.Unlock()
	}
	return errors.Join(errs...)
}

func (j *journal) finish(seg *jsegment) error {
	path := filepath.Join(j.sp.dir, journalName(seg.seq))
	if seg.marked == 0 {
		err := seg.f.Close()
		if rerr := os.Remove(path); err == nil {
			err = rerr
		}
		if err != nil {
			return fmt.Errorf("remove usage journal segment: %w", err)
		}
		return nil
	}
	// Durable before the spool counts on it: one fsync a segment, not one
	// an event.
	err := seg.f.Sync()
	if cerr := seg.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = writeMarks(j.sp.dir, seg.seq, seg.marks)
	}
	// Registered even when that failed: in memory the marks are known;
	// on disk a segment without marks is replayed whole, which is safe.
	j.sp.add(segment{seq: seg.seq, size: seg.size, events: seg.marked, journal: true, marks: seg.marks})
	if err != nil {
		return fmt.Errorf("make usage journal segment durable: %w", err)
	}
	return nil
}

// size returns the journal's bytes and marked events.
func (j *journal) size() (bytes, marked int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.bytes, j.marked
}

// The marks file: u32 CRC-32C of the bits, then the bits (little endian
// words). One that does not check out is ignored: its segment is replayed
// whole.
func writeMarks(dir string, seq uint64, marks []uint64) error {
	b := make([]byte, 4, 4+8*len(marks))
	for _, w := range marks {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	binary.LittleEndian.PutUint32(b, crc32.Checksum(b[4:], crcTable))
	final := filepath.Join(dir, marksName(seq))
	tmp := final + ".tmp"
	err := writeSynced(tmp, b)
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write usage replay marks: %w", err)
	}
	return nil
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// decodeMarks reads a marks file; ok is false when it does not check out.
func decodeMarks(b []byte) (marks []uint64, ok bool) {
	if len(b) < 4 || (len(b)-4)%8 != 0 || len(b)-4 > 8*((journalSegmentEvents+63)/64) {
		return nil, false
	}
	if crc32.Checksum(b[4:], crcTable) != binary.LittleEndian.Uint32(b) {
		return nil, false
	}
	marks = make([]uint64, (journalSegmentEvents+63)/64)
	for i := range (len(b) - 4) / 8 {
		marks[i] = binary.LittleEndian.Uint64(b[4+8*i:])
	}
	return marks, true
}

func popcount(marks []uint64) int {
	n := 0
	for _, w := range marks {
		n += bits.OnesCount64(w)
	}
	return n
}

// readJournal decodes the records of a journal segment's file, those marked
// (all when marks is nil), appending them to rows. It stops at the first
// record that does not check out (a torn write at a crash) and returns how
// many records it read in all.
func readJournal(data []byte, marks []uint64, rows []store.UsageEvent) ([]store.UsageEvent, int) {
	i := 0
	for len(data) > 0 {
		body, rest, err := nextRecord(data)
		if err != nil {
			break
		}
		data = rest
		if marks == nil || (i/64 < len(marks) && marks[i/64]&(1<<(i%64)) != 0) {
			row, err := decodeRow(body)
			if err == nil {
				rows = append(rows, row)
			}
		}
		i++
	}
	return rows, i
}

// countRecords is how many whole records data holds before the first that
// does not check out.
func countRecords(data []byte) int {
	_, n := readJournal(data, make([]uint64, 0), nil)
	return n
}
