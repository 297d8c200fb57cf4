package controlapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/relay-llm/relay/internal/configfile"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/openapi/client"
	"github.com/relay-llm/relay/openapi/models"
)

// The atomic apply. `relay apply` used to carry a plan out as one API call
// per change, so a document that failed half-way (a 409, a unique
// violation, a refusal of the store) left the changes before it in place.
// POST /api/apply takes the files instead and runs internal/configfile's
// plan and apply here, in one store transaction (store.Atomic), through an
// in-process client whose every call goes to this server's own operations —
// the same spec validation, handlers and role checks, as the caller — so
// nothing about what may be written is decided twice. The first refusal
// rolls back everything; a dry run runs the whole apply and rolls it back,
// so it fails exactly where the real run would.

// maxApplyBody caps the body of POST /api/apply: the files' own cap, JSON
// escaping (at most doubling YAML text in practice) and a little framing.
const maxApplyBody = 2*configfile.MaxInputBytes + 1<<20

// errDryRun rolls a dry run back.
var errDryRun = errors.New("dry run")

// ApplyConfig is the operation of the same name in openapi/control.yaml.
func (v *Service) ApplyConfig(ctx context.Context, body *models.ApplyRequest) (out models.ApplyResult, err error) {
	s, ctx, done, err := v.enter(ctx, "ApplyConfig")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	files := make([]configfile.File, len(body.Files))
	total := 0
	for i, f := range body.Files {
		if total += len(f.Content); total > configfile.MaxInputBytes {
			return out, invalid(fmt.Sprintf("the files of one apply are larger than %d bytes; split them", configfile.MaxInputBytes), "files")
		}
		files[i] = configfile.File{Name: f.Name, Data: []byte(f.Content)}
	}
	docs, err := configfile.ParseAll(files)
	if err != nil {
		return out, invalid(err.Error(), "files")
	}
	opts := configfile.Options{
		Prune:        deref(body.Prune, false),
		AllowSecrets: deref(body.AllowSecrets, false),
		Parallel:     1, // one transaction is one connection
		AsCaller:     true,
	}
	out = models.ApplyResult{DryRun: deref(body.DryRun, false), Warnings: []string{}}
	err = s.st.Atomic(ctx, func(ctx context.Context) error {
		cl, err := client.NewClientWithResponses("http://control.invalid", client.WithHTTPClient(&inProcess{s: s, c: c}))
		if err != nil {
			return err
		}
		plan, err := configfile.NewPlan(ctx, cl, docs, opts)
		if err != nil {
			return err
		}
		var text bytes.Buffer
		if err := plan.Print(&text); err != nil {
			return err
		}
		out.Plan = text.String()
		out.Warnings = append(out.Warnings, plan.Warnings...)
		res, err := plan.Apply(ctx)
		if err != nil {
			return err
		}
		out.Created, out.Updated, out.Deleted = int32(res.Created), int32(res.Updated), int32(res.Deleted)
		if out.DryRun {
			return errDryRun
		}
		return nil
	})
	if err != nil && !errors.Is(err, errDryRun) {
		return out, applyError(err, out.DryRun)
	}
	return out, nil
}

// applyError answers a failed apply: an operation's own refusal with its
// status and code (a 404 for an object out of the caller's reach, a 409, a
// 422 naming the field), a document the plan refused as 422 (404 when it
// names an object the caller cannot see), the message naming the document.
func applyError(err error, dryRun bool) error {
	if errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.Canceled) {
		return err
	}
	suffix := " (nothing was changed)"
	if dryRun {
		suffix = " (dry run: the apply would fail here; nothing was changed)"
	}
	msg := err.Error() + suffix
	var ae *configfile.APIError
	switch {
	case errors.As(err, &ae):
		if ae.Status >= 500 {
			return err // logged as the operation's own failure; the answer says only "internal error"
		}
		return &apiError{status: ae.Status, code: ae.Code, message: msg, details: ae.Details}
	case errors.Is(err, configfile.ErrNoSuchObject):
		return &apiError{status: http.StatusNotFound, code: codeNotFound, message: msg}
	}
	return invalid(msg, "files")
}

// inProcess is the in-process client's transport: each request goes to one
// of this server's operations as c, in the request's context (which holds
// the apply's transaction). Authentication and the CSRF check were the
// apply's own; the spec validation and the handler are the operation's.
type inProcess struct {
	s *Server
	c *caller
}

func (p *inProcess) Do(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	ctx := withCaller(context.WithValue(r.Context(), acceptKey{}, "application/json"), p.c)
	r = r.WithContext(ctx)
	route, params, err := p.s.router.FindRoute(r)
	switch {
	case err != nil:
		writeError(p.s.log, rec, r, &apiError{status: http.StatusNotFound, code: codeNotFound, message: "no such endpoint"})
	case route.Operation != nil && route.Operation.OperationID == "applyConfig":
		writeError(p.s.log, rec, r, badRequest("an apply cannot apply"))
	default:
		if err := validate(ctx, r, route, params); err != nil {
			writeError(p.s.log, rec, r, err)
		} else {
			p.s.api.ServeHTTP(rec, r)
		}
	}
	return rec.Result(), nil
}
