package guardrail

import "strings"

// Candidate windows. Every built-in expression matches only bytes of a
// small set — digits, separators, letters of a kind — so a match lies
// inside a maximal run of that set's bytes. Scanning for the runs is a
// byte loop; the expression then runs only on the runs that could hold a
// valid match (enough digits, an @), each with one byte of context on
// either side so that \b sees the real neighbours. Matches never cross a
// run, so the expression finds, run by run, exactly what it finds over
// the whole text: FuzzScanDifferential holds the two to the same answers.

type byteSet [256]bool

func setOf(ranges ...string) *byteSet {
	var s byteSet
	for _, r := range ranges {
		if len(r) == 3 && r[1] == '-' {
			for c := int(r[0]); c <= int(r[2]); c++ {
				s[c] = true
			}
			continue
		}
		for i := range len(r) {
			s[r[i]] = true
		}
	}
	return &s
}

var (
	cardSet  = setOf("0-9", " -")
	ibanSet  = setOf("A-Z", "0-9", " ")
	dniSet   = setOf("A-Z", "0-9")
	phoneSet = setOf("0-9", " .()+-")
	emailSet = setOf("A-Z", "a-z", "0-9", "._%+@-")
)

// runs emits the runs of set's bytes in text that keep says may hold a
// match, widened by one byte each side.
func runs(text string, set *byteSet, keep func(run string) bool, emit func(lo, hi int)) {
	n := len(text)
	for i := 0; i < n; {
		if !set[text[i]] {
			i++
			continue
		}
		j := i + 1
		for j < n && set[text[j]] {
			j++
		}
		if keep(text[i:j]) {
			emit(max(i-1, 0), min(j+1, n))
		}
		i = j + 1
	}
}

func countDigits(s string) int {
	n := 0
	for i := range len(s) {
		if s[i] >= '0' && s[i] <= '9' {
			n++
		}
	}
	return n
}

func cardRuns(text string, emit func(lo, hi int)) {
	runs(text, cardSet, func(r string) bool { return countDigits(r) >= 13 }, emit)
}

func ibanRuns(text string, emit func(lo, hi int)) {
	runs(text, ibanSet, func(r string) bool { return len(r) >= 15 && countDigits(r) >= 2 }, emit)
}

func dniRuns(text string, emit func(lo, hi int)) {
	runs(text, dniSet, func(r string) bool { return len(r) >= 9 && countDigits(r) >= 7 }, emit)
}

func phoneRuns(text string, emit func(lo, hi int)) {
	runs(text, phoneSet, func(r string) bool { return countDigits(r) >= 8 }, emit)
}

func emailRuns(text string, emit func(lo, hi int)) {
	runs(text, emailSet, func(r string) bool { return strings.IndexByte(r, '@') >= 0 }, emit)
}

// secretDetector finds secrets where one can start: every secret the
// expression knows begins with one of secretMarks, so it is tried only
// at those, anchored, over the bytes its alternatives can use.
type secretDetector struct{}

func (secretDetector) Kind() Kind { return Secret }

var tokenSet = setOf("A-Z", "a-z", "0-9", "_.-")

func (secretDetector) Find(dst []Match, text string) []Match {
	if !hasSecretMark(text) {
		return dst
	}
	n := len(text)
	for i := 0; i < n; {
		if !markAt(text, i) {
			i++
			continue
		}
		// The window an alternative starting here may use.
		j := i
		if strings.HasPrefix(text[i:], "-----BEGIN") {
			j = min(i+80, n)
		} else {
			for j < n && tokenSet[text[j]] {
				j++
			}
		}
		loc := secretRE.FindStringIndex(text[i:j])
		if loc == nil || loc[0] != 0 {
			i++
			continue
		}
		if end := i + loc[1]; end-i <= MaxMatch {
			dst = append(dst, Match{Kind: Secret, Start: i, End: end})
			i = end
		} else {
			i = end // the expression consumed it: too long to be one
		}
	}
	return dst
}

// markAt reports whether a secret mark starts at text[i].
func markAt(text string, i int) bool {
	switch text[i] {
	case 's', 'A', 'g', 'x', '-', 'e':
	default:
		return false
	}
	for _, m := range secretMarks {
		if strings.HasPrefix(text[i:], m) {
			return true
		}
	}
	return false
}
