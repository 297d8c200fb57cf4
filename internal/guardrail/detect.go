package guardrail

import (
	"regexp"
	"slices"
	"strings"
)

// Kind is what a detector finds; placeholders are named by it.
type Kind string

// Built-in kinds, and Deny for a deny-list.
const (
	Email      Kind = "email"
	Phone      Kind = "phone"
	Card       Kind = "card"
	IBAN       Kind = "iban"
	NationalID Kind = "national_id"
	Secret     Kind = "secret"
	Deny       Kind = "deny"
)

// Builtins are the built-in kinds, in the order they win overlaps.
var Builtins = []Kind{Secret, Card, IBAN, NationalID, Email, Phone}

// MaxMatch bounds the length of what a built-in detector matches; it is
// the least hold-back window of a Stream.
const MaxMatch = 256

// Match is one finding: the bytes [Start, End) of the text.
type Match struct {
	Kind       Kind
	Start, End int
}

// Detector finds one kind in text.
type Detector interface {
	Kind() Kind
	// Find appends the matches in text, in order, not overlapping.
	Find(dst []Match, text string) []Match
}

type reDetector struct {
	kind  Kind
	re    *regexp.Regexp
	valid func(string) bool // nil: every match counts
	// maybe is a cheap test text must pass for the expression to run at
	// all (an @ for e-mail, a digit for numbers); nil: always run.
	maybe func(string) bool
	// cands, when set, hands the expression only the windows of text a
	// match can lie in (scan.go), which finds the same matches in a
	// fraction of the time; nil: the whole text.
	cands func(text string, emit func(lo, hi int))
}

func (d *reDetector) Kind() Kind { return d.kind }

func (d *reDetector) Find(dst []Match, text string) []Match {
	if d.maybe != nil && !d.maybe(text) {
		return dst
	}
	if d.cands != nil {
		d.cands(text, func(lo, hi int) { dst = d.find(dst, text, lo, hi) })
		return dst
	}
	return d.find(dst, text, 0, len(text))
}

// find appends the matches of the expression in text[lo:hi].
func (d *reDetector) find(dst []Match, text string, lo, hi int) []Match {
	for _, loc := range d.re.FindAllStringIndex(text[lo:hi], -1) {
		start, end := lo+loc[0], lo+loc[1]
		if end-start > MaxMatch && d.kind != Deny {
			continue
		}
		if d.valid == nil || d.valid(text[start:end]) {
			dst = append(dst, Match{Kind: d.kind, Start: start, End: end})
		}
	}
	return dst
}

var (
	emailRE = regexp.MustCompile(`[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}`)
	// Digits in groups a person writes: 13 to 19 for cards.
	cardRE = regexp.MustCompile(`\b\d(?:[ -]?\d){12,18}\b`)
	ibanRE = regexp.MustCompile(`\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b`)
	// International numbers (+…), (555) 123-4567 and 555-123-4567: bare
	// runs of digits are too often something else.
	phoneRE = regexp.MustCompile(`\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]?\d{2,4}){1,4}|\(\d{3}\)[ .-]?\d{3}[ .-]?\d{4}|\b\d{3}[.-]\d{3}[.-]\d{4}\b`)
	// Spain's DNI and NIE: eight digits (or X/Y/Z and seven) and a check letter.
	dniRE    = regexp.MustCompile(`\b[XYZ0-9]\d{7}[A-Z]\b`)
	secretRE = regexp.MustCompile(strings.Join([]string{
		`sk-ant-[A-Za-z0-9_-]{20,200}`,                // Anthropic
		`sk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,200}`, // OpenAI, Relay keys
		`AKIA[0-9A-Z]{16}`,                            // AWS access key id
		`AIza[0-9A-Za-z_-]{35}`,                       // Google API key
		`gh[pousr]_[A-Za-z0-9]{36,200}`,               // GitHub
		`xox[abposr]-[A-Za-z0-9-]{10,200}`,            // Slack
		`-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----`,
		`eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}`, // JWT
	}, "|"))
)

// luhn reports whether the digits of s pass the Luhn check.
func luhn(s string) bool {
	sum, n, double := 0, 0, false
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if c < '0' || c > '9' {
			continue
		}
		d := int(c - '0')
		if double {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum, double, n = sum+d, !double, n+1
	}
	return n >= 13 && n <= 19 && sum%10 == 0
}

// ibanValid checks an IBAN's length and its mod-97 check digits.
func ibanValid(s string) bool {
	b := make([]byte, 0, 34)
	for i := range len(s) {
		if s[i] != ' ' {
			b = append(b, s[i])
		}
	}
	if len(b) < 15 || len(b) > 34 {
		return false
	}
	rem := 0
	for _, c := range append(b[4:], b[:4]...) {
		switch {
		case c >= '0' && c <= '9':
			rem = (rem*10 + int(c-'0')) % 97
		case c >= 'A' && c <= 'Z':
			rem = (rem*100 + int(c-'A') + 10) % 97
		default:
			return false
		}
	}
	return rem == 1
}

// dniValid checks a DNI or NIE check letter.
func dniValid(s string) bool {
	const letters = "TRWAGMYFPDXBNJZSQVHLCKE"
	n := 0
	for i := range 8 {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			n = n*10 + int(c-'0')
		case i == 0 && c >= 'X' && c <= 'Z':
			n = int(c - 'X')
		default:
			return false
		}
	}
	return letters[n%23] == s[8]
}

// phoneValid wants 8 to 15 digits and not a card.
func phoneValid(s string) bool {
	n := 0
	for i := range len(s) {
		if s[i] >= '0' && s[i] <= '9' {
			n++
		}
	}
	return n >= 8 && n <= 15 && !luhn(s)
}

func hasDigit(s string) bool { return strings.ContainsAny(s, "0123456789") }

func hasAt(s string) bool { return strings.IndexByte(s, '@') >= 0 }

// secretMarks are what every secret the detector knows starts with.
var secretMarks = []string{"sk-", "AKIA", "AIza", "gh", "xox", "-----BEGIN", "eyJ"}

func hasSecretMark(s string) bool {
	for _, m := range secretMarks {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// Builtin returns the detector of a built-in kind; false for another.
func Builtin(k Kind) (Detector, bool) {
	switch k {
	case Email:
		return &reDetector{kind: k, re: emailRE, maybe: hasAt, cands: emailRuns}, true
	case Card:
		return &reDetector{kind: k, re: cardRE, valid: luhn, maybe: hasDigit, cands: cardRuns}, true
	case IBAN:
		return &reDetector{kind: k, re: ibanRE, valid: ibanValid, maybe: hasDigit, cands: ibanRuns}, true
	case NationalID:
		return &reDetector{kind: k, re: dniRE, valid: dniValid, maybe: hasDigit, cands: dniRuns}, true
	case Phone:
		return &reDetector{kind: k, re: phoneRE, valid: phoneValid, maybe: hasDigit, cands: phoneRuns}, true
	case Secret:
		return &secretDetector{}, true
	}
	return nil, false
}

// DenyList returns the detector of a deny-list: whole words (any case)
// and regular expressions. An invalid expression is an error naming it.
func DenyList(words, patterns []string) (Detector, error) {
	alts := make([]string, 0, len(words)+len(patterns))
	for _, w := range words {
		if w = strings.TrimSpace(w); w != "" {
			alts = append(alts, `(?i:\b`+regexp.QuoteMeta(w)+`\b)`)
		}
	}
	for _, p := range patterns {
		if _, err := regexp.Compile(p); err != nil {
			return nil, err
		}
		alts = append(alts, "(?:"+p+")")
	}
	if len(alts) == 0 {
		return nil, nil
	}
	re, err := regexp.Compile(strings.Join(alts, "|"))
	if err != nil {
		return nil, err
	}
	return &reDetector{kind: Deny, re: re}, nil
}

// Scan runs every detector over text and returns their matches in order
// of position, earlier detectors winning overlaps.
func Scan(ds []Detector, text string) []Match {
	var all []Match
	for _, d := range ds {
		for _, m := range d.Find(nil, text) {
			if !overlaps(all, m) {
				all = append(all, m)
			}
		}
	}
	slices.SortFunc(all, func(a, b Match) int { return a.Start - b.Start })
	return all
}

func overlaps(ms []Match, m Match) bool {
	for _, o := range ms {
		if m.Start < o.End && o.Start < m.End {
			return true
		}
	}
	return false
}
