package ratelimit

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Refusal is the limiter's 429: a rate limit or a budget had no room
// within the policy's max wait. It unwraps to a *wire.Error of kind
// wire.ErrRateLimited or wire.ErrBudgetExceeded, and sets the
// x-ratelimit-* headers of the rate limit that refused.
type Refusal struct {
	Err *wire.Error
	// Budget is the budget that refused, nil for a rate limit. It is the
	// seam for falling back to a cheaper model when a budget runs out
	// (not implemented): a router could catch the refusal, pick a model
	// priced below what is left, and reserve again.
	Budget *snapshot.Budget

	headers []string // name, value pairs
	degrade bool     // the policy serves the request by a cheaper fallback instead
}

// Degradable implements admission.Degradable: the request would have waited
// longer than its policy's degrade option allows (or at all, below its
// degrade priority), and its model has a cheaper fallback.
func (e *Refusal) Degradable() bool { return e.degrade }

func (e *Refusal) Error() string { return e.Err.Error() }
func (e *Refusal) Unwrap() error { return e.Err }

// SetHeaders adds the x-ratelimit-* headers and retry-after-ms, the
// exact wait that Retry-After (whole seconds, rounded up) rounds (the
// proxy calls it).
func (e *Refusal) SetHeaders(h http.Header) {
	for i := 0; i+1 < len(e.headers); i += 2 {
		h.Set(e.headers[i], e.headers[i+1])
	}
	if e.Err != nil && e.Err.RetryAfter > 0 {
		h.Set("Retry-After-Ms", strconv.FormatInt(max(1, e.Err.RetryAfter.Milliseconds()), 10))
	}
}

// refusal explains a refused reservation of cs. With degrade, a refusal
// for a wait (not a budget's, nor one that can never fit) is Degradable
// and counted as degraded, not refused.
func (r *reservation) refusal(cs []Counter, ms []meta, v Verdict, degrade bool) error {
	e := &Refusal{Err: &wire.Error{Kind: wire.ErrRateLimited}}
	if v.Wait != Never {
		e.Err.RetryAfter = max(v.Wait, time.Millisecond)
	}
	var m meta
	if v.Worst >= 0 && v.Worst < len(ms) {
		m = ms[v.Worst]
	}
	if degrade && v.Wait != Never && m.budget == nil {
		e.degrade = true
		r.l.degraded.Add(1)
	}
	switch {
	case m.budget != nil:
		r.l.budgetRefused.Add(1)
		e.Err.Kind, e.Budget = wire.ErrBudgetExceeded, m.budget
		what := "relay key"
		switch {
		case m.budget.TeamID != snapshot.ID{}:
			what = "team"
		case m.budget.ProjectID != snapshot.ID{}:
			what = "project"
		}
		period := "daily"
		if m.budget.Period == "month" {
			period = "monthly"
		}
		if v.Wait == Never {
			e.Err.Msg = fmt.Sprintf("This request may cost more than the whole %s budget of this %s.", period, what)
		} else {
			e.Err.Msg = fmt.Sprintf("The %s budget of this %s is spent; it renews in %s.", period, what, roundWait(v.Wait))
		}
		return e
	case m.rl == nil:
		if !e.degrade {
			r.l.refused.Add(1)
		}
		e.Err.Msg = fmt.Sprintf("Too many requests are waiting for their rate limit; retry in %s.", roundWait(v.Wait))
		return e
	}
	if !e.degrade {
		r.l.refused.Add(1)
	}
	whose := fmt.Sprintf("The rate limit %q", m.rl.Slug)
	if m.tier {
		whose = fmt.Sprintf("The tier limit %q of the host key for the model %q", m.rl.Slug, r.modelName())
	}
	switch {
	case v.Wait == Never && m.rule != nil:
		e.Err.Msg = fmt.Sprintf("%s allows %d %s per %s; this request needs about %d (lower max_tokens).",
			whose, m.rule.Amount, meterWords(m.rule.Meter), windowWords(m.rule.Window), cs[v.Worst].Amount)
	case m.rule != nil && m.rule.Meter == snapshot.MeterConcurrency:
		e.Err.Msg = fmt.Sprintf("%s allows %d requests at once; retry in %s.", whose, m.rule.Amount, roundWait(v.Wait))
	case m.rule != nil:
		e.Err.Msg = fmt.Sprintf("%s allows %d %s per %s; retry in %s.", whose, m.rule.Amount, meterWords(m.rule.Meter), windowWords(m.rule.Window), roundWait(v.Wait))
	default:
		e.Err.Msg = fmt.Sprintf("%s paces requests to the provider; retry in %s.", whose, roundWait(v.Wait))
	}
	e.headers = rateHeaders(cs, ms, v, m.rl)
	return e
}

func (r *reservation) modelName() string {
	if r.model == nil {
		return ""
	}
	return r.model.Name
}

// rateHeaders describes rl's requests rule and its first tokens rule the
// way OpenAI's x-ratelimit-* headers do.
func rateHeaders(cs []Counter, ms []meta, v Verdict, rl *snapshot.RateLimit) []string {
	var out []string
	var reqDone, tokDone bool
	for i, m := range ms {
		if m.rl != rl || m.rule == nil || cs[i].Kind != KindWindow || i >= len(v.Used) {
			continue
		}
		suffix := ""
		switch {
		case m.rule.Meter == snapshot.MeterRequests && !reqDone:
			suffix, reqDone = "requests", true
		case m.rule.Meter != snapshot.MeterRequests && !tokDone:
			suffix, tokDone = "tokens", true
		default:
			continue
		}
		out = append(out,
			"X-Ratelimit-Limit-"+suffix, strconv.FormatInt(m.rule.Amount, 10),
			"X-Ratelimit-Remaining-"+suffix, strconv.FormatInt(max(0, m.rule.Amount-v.Used[i]), 10),
			"X-Ratelimit-Reset-"+suffix, roundWait(v.Reset[i]))
	}
	return out
}

// roundWait prints a wait like OpenAI's reset headers: "20ms", "1.5s", "6m0s".
func roundWait(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func meterWords(m snapshot.Meter) string {
	switch m {
	case snapshot.MeterRequests:
		return "requests"
	case snapshot.MeterInputTokens:
		return "input tokens"
	case snapshot.MeterOutputTokens:
		return "output tokens"
	case snapshot.MeterTotalTokens:
		return "tokens"
	}
	return string(m)
}

func windowWords(d time.Duration) string {
	switch d {
	case time.Second:
		return "second"
	case time.Minute:
		return "minute"
	case time.Hour:
		return "hour"
	case 24 * time.Hour:
		return "day"
	}
	return d.String()
}
