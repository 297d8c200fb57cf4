package guardrail

import "slices"

// A Memo lets a text that only grows at its end and loses bytes at its
// start — a streamed answer's held window — be scanned again and again
// without running the expressions again over what they saw before. A
// built-in detector's expression runs only on candidate windows (scan.go),
// and what it finds in one depends on the window's bytes alone; with the
// text's bytes fixed by their offset in the whole answer, a window at the
// same offsets holds the same bytes, so its matches are remembered by
// those offsets from one scan to the next. Only the windows a scan has
// not seen — the one the new text reaches into, the one a cut at the
// start shortened — run the expression. ScanAt with a Memo finds exactly
// what Scan finds: TestScanAt_MatchesScan and FuzzHoldMemo hold it.
type Memo struct {
	ds []detMemo // one a detector, by its index
}

// detMemo is one detector's windows of the last scan and of this one.
type detMemo struct {
	prev, next []memoRun
	// prevMs and nextMs hold the windows' matches, by absolute offset.
	prevMs, nextMs []Match
	k              int // the next prev window to compare
}

// memoRun is a candidate window [lo, hi) and its matches ms[from:to].
type memoRun struct{ lo, hi, from, to int }

// ScanAt is Scan of text, whose first byte is at offset base of the whole
// text, remembering in m (nil: Scan). Offsets in the result are text's.
func ScanAt(ds []Detector, text string, base int, m *Memo) []Match {
	if m == nil {
		return Scan(ds, text)
	}
	if len(m.ds) != len(ds) {
		m.ds = make([]detMemo, len(ds))
	}
	var all []Match
	var found []Match
	for i, d := range ds {
		found = found[:0]
		if rd, ok := d.(*reDetector); ok && rd.cands != nil {
			found = rd.findAt(found, text, base, &m.ds[i])
		} else {
			found = d.Find(found, text)
		}
		for _, f := range found {
			if !overlaps(all, f) {
				all = append(all, f)
			}
		}
	}
	slices.SortFunc(all, func(a, b Match) int { return a.Start - b.Start })
	return all
}

// findAt is Find, remembering each candidate window's matches in dm.
func (d *reDetector) findAt(dst []Match, text string, base int, dm *detMemo) []Match {
	dm.next, dm.nextMs, dm.k = dm.next[:0], dm.nextMs[:0], 0
	if d.maybe == nil || d.maybe(text) {
		d.cands(text, func(lo, hi int) {
			from := len(dm.nextMs)
			if r, ok := dm.seen(base+lo, base+hi); ok {
				for _, m := range dm.prevMs[r.from:r.to] {
					dst = append(dst, Match{Kind: m.Kind, Start: m.Start - base, End: m.End - base})
				}
				dm.nextMs = append(dm.nextMs, dm.prevMs[r.from:r.to]...)
			} else {
				n := len(dst)
				dst = d.find(dst, text, lo, hi)
				for _, m := range dst[n:] {
					dm.nextMs = append(dm.nextMs, Match{Kind: m.Kind, Start: m.Start + base, End: m.End + base})
				}
			}
			dm.next = append(dm.next, memoRun{lo: base + lo, hi: base + hi, from: from, to: len(dm.nextMs)})
		})
	}
	dm.prev, dm.next = dm.next, dm.prev
	dm.prevMs, dm.nextMs = dm.nextMs, dm.prevMs
	return dst
}

// seen finds the last scan's window [lo, hi). Windows come in order, so
// one pass over the last scan's serves a whole scan.
func (dm *detMemo) seen(lo, hi int) (memoRun, bool) {
	for dm.k < len(dm.prev) && dm.prev[dm.k].lo < lo {
		dm.k++
	}
	if dm.k < len(dm.prev) && dm.prev[dm.k].lo == lo && dm.prev[dm.k].hi == hi {
		return dm.prev[dm.k], true
	}
	return memoRun{}, false
}
