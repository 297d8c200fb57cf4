package usage

import (
	"bytes"
	"hash/fnv"
	"math"

	"github.com/relay-llm/relay/internal/event"
)

// keepDetail reports whether the ledger stores rec's routing decision in
// full. A plain routed success — first candidate, first attempt, nothing
// skipped, held or downgraded — is explained by its short form, the `route`
// column (X-Relay-Route), and its full decision is three quarters of the
// row's bytes; so the full form is kept only where it explains something:
//
//   - a refusal or a failure (status 400 and above, an error kind);
//   - a failover or retry (more than one attempt);
//   - a request served by another binding than the plan's first (a
//     failover across bindings, a model fallback);
//   - a degraded plan: a candidate skipped, keys held, disabled or
//     unusable, a fallback dropped, a budget downgrade, a degrade;
//   - what the content controls did: a response cache hit, a guardrail's
//     action;
//   - and a sampled fraction of the rest (sample per 2³², chosen by a hash
//     of the request id, so the same request is always in or out).
func keepDetail(rec *event.Record, sample uint32) bool {
	d := rec.RouteDetail
	switch {
	case len(d) == 0:
		return false
	case rec.Status >= 400, rec.ErrorKind != "", rec.Attempts > 1:
		return true
	}
	for _, m := range [...]string{`"skip":`, `"keys_held":`, `"keys_unusable":`, `"keys_disabled":`,
		`"dropped_fallbacks":`, `"budget_fallback":`, `"degraded":`, `"guardrails":`, `"cache":{"state":"hit"`} {
		if bytes.Contains(d, []byte(m)) {
			return true
		}
	}
	if chosenElsewhere(d) {
		return true
	}
	h := fnv.New32a()
	h.Write([]byte(rec.RequestID))
	return h.Sum32() < sample
}

// chosenElsewhere reports whether the decision's chosen binding is not its
// first candidate (internal/routing's AppendDetail: the first
// "binding_id" is the first candidate's, "chosen" names the one served).
func chosenElsewhere(d []byte) bool {
	const id, chosen = `"binding_id":"`, `"chosen":{"binding_id":"`
	i := bytes.Index(d, []byte(id))
	j := bytes.Index(d, []byte(chosen))
	if i < 0 || j < 0 {
		return j < 0 && i >= 0 // candidates but none chosen: explains a refusal
	}
	first, served := d[i+len(id):], d[j+len(chosen):]
	const uuidLen = 36
	if len(first) < uuidLen || len(served) < uuidLen {
		return true
	}
	return !bytes.Equal(first[:uuidLen], served[:uuidLen])
}

// detailSample turns a fraction (0 to 1) into keepDetail's sample.
func detailSample(f float64) uint32 {
	switch {
	case f <= 0 || math.IsNaN(f):
		return 0
	case f >= 1:
		return math.MaxUint32
	}
	return uint32(f * math.MaxUint32)
}
