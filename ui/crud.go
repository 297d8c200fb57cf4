package ui

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/controlapi"
)

// kind is one catalog kind as the console manages it: its list, and the
// form and writes for the kinds that have them (nil: not offered).
type kind struct {
	slug, title, one string
	search           string // what a search matches ("slug or name"); empty: no search
	columns          []column
	// write reports whether the signed-in user may create and change rows of
	// this kind; what it may not do is not offered (the API refuses it anyway).
	write  func(*controlapi.Principal) bool
	list   func(p *page, term string, limit int32, cursor *string) ([]row, *string, error)
	fields func(p *page, v *vals, editing bool) ([]field, error)
	create func(p *page, v *vals) error
	load   func(p *page, id uuid.UUID) (url.Values, error)
	edit   func(p *page, id uuid.UUID, v *vals) error
	remove func(p *page, id uuid.UUID) error
}

// pageSize is the rows of one list page; the API caps a page at 500.
const pageSize = 50

// errRendered tells a handler that a write already rendered its answer (a
// minted relay key is shown on the page that mints it, not after a redirect).
var errRendered = errors.New("rendered")

func (h *Handler) list(k *kind) func(*page) {
	return func(p *page) {
		var cursor *string
		if c := p.r.URL.Query().Get("cursor"); c != "" {
			cursor = &c
		}
		term := ""
		if k.search != "" {
			term = strings.TrimSpace(p.r.URL.Query().Get("q"))
		}
		rows, next, err := k.list(p, term, pageSize, cursor)
		if err != nil {
			h.failErr(p, err)
			return
		}
		canWrite := k.write != nil && k.write(p.who)
		for i := range rows {
			if canWrite && k.edit != nil {
				rows[i].Actions = append(rows[i].Actions, rowAction{Href: "/" + k.slug + "/" + rows[i].ID, Label: "Edit"})
			}
			if canWrite && k.remove != nil {
				rows[i].Actions = append(rows[i].Actions, rowAction{Href: "/" + k.slug + "/" + rows[i].ID + "/delete",
					Label: "Delete", Danger: true, Confirm: "Delete this " + k.one + "?"})
			}
		}
		v := listView{Title: k.title, CSRF: p.who.CSRFToken, Href: "/" + k.slug, Query: term, Table: table{
			Columns: k.columns, Rows: rows, Empty: "No " + k.title + " yet.",
		}}
		if k.search != "" {
			v.Search = "Search by " + k.search
		}
		if term != "" {
			v.Table.Empty = "Nothing matches “" + term + "”."
		}
		base := url.Values{}
		if term != "" {
			base.Set("q", term)
		}
		if next != nil {
			q := url.Values{"cursor": {*next}}
			if term != "" {
				q.Set("q", term)
			}
			v.Table.Next = "/" + k.slug + "?" + q.Encode()
		}
		if cursor != nil {
			v.Table.First = "/" + k.slug
			if term != "" {
				v.Table.First += "?" + base.Encode()
			}
		}
		if canWrite && k.create != nil {
			v.NewHref, v.NewLabel = "/"+k.slug+"/new", "New "+k.one
		}
		p.render(http.StatusOK, k.title, k.slug, listPage(v))
	}
}

func (h *Handler) forbiddenWrite(p *page, k *kind) bool {
	if k.write != nil && k.write(p.who) {
		return false
	}
	p.fail(controlapi.Problem{Status: http.StatusForbidden, Message: "Your role bindings do not let you change " + k.title + "."})
	return true
}

// renderForm renders a kind's form with the values and problem of a try.
func (h *Handler) renderForm(p *page, k *kind, id string, v *vals, pr *controlapi.Problem) {
	fields, err := k.fields(p, v, id != "")
	if err != nil {
		h.failErr(p, err)
		return
	}
	f := form{CSRF: p.who.CSRFToken, Cancel: "/" + k.slug, Fields: fields}
	if id == "" {
		f.Title, f.Action, f.Submit = "New "+k.one, "/"+k.slug, "Create "+k.one
	} else {
		f.Title, f.Action, f.Submit = "Edit "+k.one, "/"+k.slug+"/"+id, "Save"
	}
	status := http.StatusOK
	if pr != nil {
		status, f.Error = pr.Status, pr.Message
		for i := range f.Fields {
			if m, ok := pr.Fields[f.Fields[i].Name]; ok {
				f.Fields[i].Error = m
			}
		}
	}
	p.render(status, f.Title, k.slug, formPage(f))
}

func (h *Handler) newForm(k *kind) func(*page) {
	return func(p *page) {
		if h.forbiddenWrite(p, k) {
			return
		}
		h.renderForm(p, k, "", newVals(url.Values{}), nil)
	}
}

func (h *Handler) createRow(k *kind) func(*page) {
	return func(p *page) {
		v := newVals(p.r.PostForm)
		err := k.create(p, v)
		if errors.Is(err, errRendered) {
			return
		}
		if err != nil {
			h.formFailed(p, k, "", v, err)
			return
		}
		redirect(p.w, p.r, "/"+k.slug)
	}
}

// formFailed shows a refused write: in place on the form when it is about
// the input, as a page of its own otherwise (not found, forbidden, internal).
func (h *Handler) formFailed(p *page, k *kind, id string, v *vals, err error) {
	pr := explain(p.r.Method, err)
	switch {
	case pr.Status >= 500:
		h.log.ErrorContext(p.ctx, "console write failed", "path", p.r.URL.Path, "err", err)
		p.fail(pr)
	case pr.Status == http.StatusNotFound || pr.Status == http.StatusForbidden:
		p.fail(pr)
	default:
		h.renderForm(p, k, id, v, &pr)
	}
}

func (h *Handler) editForm(k *kind) func(*page) {
	return func(p *page) {
		id, ok := pathID(p)
		if !ok || h.forbiddenWrite(p, k) {
			return
		}
		values, err := k.load(p, id)
		if err != nil {
			h.failErr(p, err)
			return
		}
		h.renderForm(p, k, id.String(), newVals(values), nil)
	}
}

func (h *Handler) updateRow(k *kind) func(*page) {
	return func(p *page) {
		id, ok := pathID(p)
		if !ok {
			return
		}
		v := newVals(p.r.PostForm)
		if err := k.edit(p, id, v); err != nil {
			h.formFailed(p, k, id.String(), v, err)
			return
		}
		redirect(p.w, p.r, "/"+k.slug)
	}
}

func (h *Handler) deleteRow(k *kind) func(*page) {
	return func(p *page) {
		id, ok := pathID(p)
		if !ok {
			return
		}
		if err := k.remove(p, id); err != nil {
			h.failErr(p, err)
			return
		}
		redirect(p.w, p.r, "/"+k.slug)
	}
}

func pathID(p *page) (uuid.UUID, bool) {
	id, err := uuid.Parse(p.r.PathValue("id"))
	if err != nil {
		p.fail(controlapi.Problem{Status: http.StatusNotFound, Message: "There is nothing at this address."})
		return uuid.Nil, false
	}
	return id, true
}
