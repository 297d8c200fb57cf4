package ui

import (
	"context"
)

// listOrSearch is a kind's page of rows: the service's search for term when
// one is given, else its list.
func listOrSearch[P, L any](p *page, term string, params P, list func(context.Context, P) (L, error), search func(context.Context, string, P) (L, error)) (L, error) {
	if term != "" {
		return search(p.ctx, term, params)
	}
	return list(p.ctx, params)
}

// options is a form's choices from the first page of a kind: one option per
// item, none when the list failed (the form then shows ids).
func options[X any](items []X, err error, opt func(X) option) []option {
	if err != nil {
		return nil
	}
	out := make([]option, 0, len(items))
	for _, x := range items {
		out = append(out, opt(x))
	}
	return out
}
