package mockupstream

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

type faultKind uint8

const (
	faultNone      faultKind = iota
	faultStatus              // answer with an error status
	faultQuota               // out of credit / quota
	faultSlow                // late first byte, then a normal answer
	faultStall               // stop sending, keep the connection open
	faultReset               // abort the connection
	faultMalformed           // 200 with broken JSON
	faultMidstream           // in-stream error after the 200
)

// defaultFaultEvents is how many stream events stall, reset, malformed and
// midstream let through when the spec names no count.
const defaultFaultEvents = 3

// fault is a parsed fault spec.
type fault struct {
	kind       faultKind
	spec       string        // as recorded, e.g. "429-3"
	status     int           // faultStatus
	retryAfter int           // seconds, for 429
	delay      time.Duration // faultSlow
	after      int           // events before a stream fault; -1 = default
}

// streaming reports whether the fault acts on the body rather than the status.
func (f fault) streaming() bool {
	return f.kind >= faultStall
}

// events is how many stream events go out before a stream fault strikes.
func (f fault) events() int {
	if f.after < 0 {
		return defaultFaultEvents
	}
	return f.after
}

const faultToken = "fault-"

// findFault looks for a "fault-<spec>" token in s. The token must start s or
// follow a non-alphanumeric byte, so "default-model" holds no fault.
func findFault(s string) (fault, bool) {
	for off := 0; off < len(s); {
		i := strings.Index(s[off:], faultToken)
		if i < 0 {
			return fault{}, false
		}
		i += off
		if i == 0 || !isAlnum(s[i-1]) {
			if f, ok := parseFaultSpec(s[i+len(faultToken):]); ok {
				return f, true
			}
		}
		off = i + len(faultToken)
	}
	return fault{}, false
}

// parseFaultSpec parses "<kind>[-<n>]" at the start of s; anything after is
// ignored ("429-3-mini" is "429-3").
func parseFaultSpec(s string) (fault, bool) {
	end := 0
	for end < len(s) && isAlnum(s[end]) {
		end++
	}
	kind := strings.ToLower(s[:end])
	num, hasNum := -1, false
	if end+1 < len(s) && s[end] == '-' && isDigit(s[end+1]) {
		j := end + 1
		for j < len(s) && isDigit(s[j]) && j-end <= 9 {
			j++
		}
		n, err := strconv.Atoi(s[end+1 : j])
		if err == nil {
			num, hasNum = n, true
			end = j
		}
	}
	f := fault{spec: s[:end], after: -1}
	switch kind {
	case "slow":
		f.kind = faultSlow
		f.delay = 2 * time.Second
		if hasNum {
			f.delay = time.Duration(num) * time.Millisecond
		}
	case "stall":
		f.kind = faultStall
	case "reset":
		f.kind = faultReset
	case "malformed":
		f.kind = faultMalformed
	case "midstream":
		f.kind = faultMidstream
	case "quota":
		f.kind = faultQuota
	default:
		st, err := strconv.Atoi(kind)
		if err != nil || len(kind) != 3 || st < 400 || st > 599 {
			return fault{}, false
		}
		f.kind, f.status = faultStatus, st
		if st == http.StatusTooManyRequests {
			f.retryAfter = 1
			if hasNum {
				f.retryAfter = num
			}
		}
		return f, true
	}
	if hasNum && f.kind != faultSlow {
		f.after = num
	}
	return f, true
}

func isAlnum(b byte) bool {
	return isDigit(b) || (b|0x20 >= 'a' && b|0x20 <= 'z')
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }
