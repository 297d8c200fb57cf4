package ui

import (
	"strconv"
	"strings"

	"github.com/relay-llm/relay/openapi/models"
)

// A routing decision as the console shows it: the explain tool's answer and
// a request's route_detail in the usage ledger are the same JSON (the
// router's explanation, RouteExplanation in control.yaml), so both pages
// render it with routeViewOf and the routeDecision component.

type routeView struct {
	Stats      []stat
	Verdict    string // where the request went (or would go first); empty: nowhere
	Candidates table
	Dropped    table
}

// routeViewOf builds the view of e; went says whether the request was sent
// ("went to") or only explained ("would go to").
func routeViewOf(e models.RouteExplanation, went bool) routeView {
	v := routeView{Stats: []stat{{"Model", e.Model}, {"Strategy", string(e.Strategy)}, {"Strategy from", string(e.StrategyFrom)}}}
	if e.Hint != nil && *e.Hint != "" {
		hint := *e.Hint
		if e.HintIgnored != nil && *e.HintIgnored {
			hint += " (ignored: the policy fixes the strategy)"
		}
		v.Stats = append(v.Stats, stat{"Hint", hint})
	}
	v.Stats = append(v.Stats, stat{"Affinity", string(e.Affinity)})
	if e.SessionFrom != nil && *e.SessionFrom != "" {
		v.Stats = append(v.Stats, stat{"Session from", *e.SessionFrom})
	}
	v.Stats = append(v.Stats, stat{"Needs", needsOf(e.Needs)})
	if c := e.Chosen; c != nil {
		v.Stats = append(v.Stats, stat{"Affinity outcome", string(c.Affinity)})
		verb := "would go"
		if went {
			verb = "went"
		}
		v.Verdict = "The request " + verb + " to " + c.Host + " (" + c.Model + ") with host key " + c.HostKey +
			" (slot " + strconv.Itoa(c.Slot) + ", affinity " + string(c.Affinity) + ")."
	}
	v.Candidates = table{Columns: []column{{Title: "Order", Num: true}, {Title: "Host"}, {Title: "Model"}, {Title: "Upstream model"},
		{Title: "Shape"}, {Title: "Score", Num: true}, {Title: "Decision"}, {Title: "Host keys, in order"}, {Title: "Keys left out"}},
		Empty: "The model has no bindings."}
	for _, b := range e.Candidates {
		decision := cell{Text: "candidate", Badge: "ok"}
		switch {
		case b.Skip != nil && *b.Skip != "":
			decision = cell{Text: "skipped: " + *b.Skip, Badge: "warn"}
		case e.Chosen != nil && e.Chosen.BindingID == b.BindingID:
			decision = cell{Text: "chosen", Badge: "ok"}
			if !went {
				decision.Text = "taken first"
			}
		}
		model := b.Model
		if b.Fallback != nil && *b.Fallback > 0 {
			model += " (fallback " + strconv.Itoa(*b.Fallback) + ")"
		}
		keys := ""
		if b.Keys != nil {
			keys = strings.Join(*b.Keys, ", ")
			if b.Affinity != nil && *b.Affinity && keys != "" {
				keys += " (session order)"
			}
		}
		v.Candidates.Rows = append(v.Candidates.Rows, row{Cells: []cell{{Text: strconv.Itoa(b.Position), Num: true}, {Text: b.Host, Mono: true},
			{Text: model, Mono: true}, {Text: deref(b.UpstreamModel), Mono: true}, {Text: b.Shape}, {Text: strconv.FormatFloat(float64(b.Score), 'g', 6, 32), Num: true}, decision,
			{Text: keys, Mono: true}, {Text: keysLeftOut(b)}}})
	}
	v.Dropped = table{Columns: []column{{Title: "Fallback model"}, {Title: "Why it was left out"}}}
	if e.DroppedFallbacks != nil {
		for _, d := range *e.DroppedFallbacks {
			v.Dropped.Rows = append(v.Dropped.Rows, row{Cells: []cell{{Text: d.Model, Mono: true}, {Text: d.Why}}})
		}
	}
	return v
}

// needsOf tells what the request needs of a binding's model.
func needsOf(n models.RouteNeeds) string {
	parts := []string{"~" + count(n.PromptTokens) + " prompt tokens"}
	if n.MaxOutput != nil && *n.MaxOutput > 0 {
		parts = append(parts, count(*n.MaxOutput)+" output")
	}
	for _, f := range []struct {
		on   *bool
		what string
	}{{n.Tools, "tools"}, {n.Images, "images"}, {n.Structured, "structured output"}} {
		if f.on != nil && *f.on {
			parts = append(parts, f.what)
		}
	}
	return strings.Join(parts, ", ")
}

func keysLeftOut(b models.RouteCandidate) string {
	var parts []string
	for _, n := range []struct {
		n    *int
		what string
	}{{b.KeysDisabled, "disabled"}, {b.KeysUnusable, "unusable secret"}, {b.KeysNotGranted, "not granted by the policy"}, {b.KeysHeld, "held by its breaker"}} {
		if n.n != nil && *n.n > 0 {
			parts = append(parts, strconv.Itoa(*n.n)+" "+n.what)
		}
	}
	return strings.Join(parts, "; ")
}

// orEmpty is *s, or "" for nil.
func orEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
