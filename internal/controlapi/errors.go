package controlapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/relay-llm/relay/internal/store"
)

// apiError is every error the control API answers with: a status and the
// shared Error body. Handlers return it (or a store error, mapped by
// writeError) instead of the per-operation error response types.
type apiError struct {
	status     int
	code       string
	message    string
	details    []models.ErrorDetail
	retryAfter int // seconds; sets Retry-After when > 0
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.code, e.message) }

// The error codes of the spec's ErrorInfo.code.
const (
	codeInvalid        = "invalid_request"
	codeUnauthed       = "unauthenticated"
	codeForbidden      = "forbidden"
	codeCSRF           = "csrf_failed"
	codeNotFound       = "not_found"
	codeConflict       = "conflict"
	codeValidation     = "validation_failed"
	codeRateLimited    = "rate_limited"
	codeInternal       = "internal"
	codeDBUnavailable  = "database_unavailable"
	codeNotImplemented = "not_implemented"
)

func detail(field, message string) models.ErrorDetail {
	return models.ErrorDetail{Field: field, Message: message}
}

func badRequest(message string, details ...models.ErrorDetail) error {
	return &apiError{status: http.StatusBadRequest, code: codeInvalid, message: message, details: details}
}

func unauthenticated(message string) error {
	return &apiError{status: http.StatusUnauthorized, code: codeUnauthed, message: message}
}

func forbidden(message string) error {
	return &apiError{status: http.StatusForbidden, code: codeForbidden, message: message}
}

func notFound(kind string) error {
	return &apiError{status: http.StatusNotFound, code: codeNotFound, message: kind + " not found"}
}

func conflict(message string, details ...models.ErrorDetail) error {
	return &apiError{status: http.StatusConflict, code: codeConflict, message: message, details: details}
}

// invalid is a 422: the request is well-formed but breaks a rule; fields
// names the fields at fault (each gets the message).
func invalid(message string, fields ...string) error {
	e := &apiError{status: http.StatusUnprocessableEntity, code: codeValidation, message: message}
	for _, f := range fields {
		e.details = append(e.details, detail(f, message))
	}
	return e
}

// noSuch is the 422 of a body field naming a row that does not exist, or one
// the caller may not see (the two are not told apart).
func noSuch(field, kind string) error {
	return invalid(fmt.Sprintf("%s: no such %s", field, kind), field)
}

// exactlyOne is the 422 of a body that must set exactly one of fields.
func exactlyOne(fields ...string) error {
	return invalid("give exactly one of "+strings.Join(fields, ", "), fields...)
}

// constraintFields names the request field and the message of each unique
// constraint, so a 409 says what is taken.
var constraintFields = map[string][2]string{
	"teams_slug_key":                       {"slug", "a team with this slug exists"},
	"projects_team_id_slug_key":            {"slug", "the team has a project with this slug"},
	"groups_slug_key":                      {"slug", "a group with this slug exists"},
	"rate_limits_slug_key":                 {"slug", "a rate limit with this slug exists"},
	"hosts_slug_key":                       {"slug", "a host with this slug exists"},
	"models_name_key":                      {"name", "a model with this name exists"},
	"bindings_model_id_host_id_key":        {"host_id", "the model has a binding on this host already"},
	"host_keys_host_id_slug_key":           {"slug", "the host has a key with this slug"},
	"policies_slug_key":                    {"slug", "a policy with this slug exists"},
	"service_accounts_project_id_slug_key": {"slug", "the project has a service account with this slug"},
	"users_email_idx":                      {"email", "a user with this email exists"},
	"role_bindings_unique_idx":             {"role", "the same role binding exists"},
	"group_memberships_pkey":               {"user_id", "the user is a member of the group already"},
	"policy_models_pkey":                   {"model_id", "the policy grants this model already"},
	"policy_host_keys_pkey":                {"host_key_id", "the policy may spend this host key already"},
	"policy_model_rate_limits_pkey":        {"model_id", "the policy has a rate limit for this model already"},
}

// fallbackRules are the messages of the schema's trigger on model fallback
// lists (migrations/00005_routing.sql): a write that races the handler's own
// checks still gets a 422 that says which rule it broke.
var fallbackRules = []string{
	"a fallback is listed twice",
	"a fallback is a model of another kind",
	"another model lists this one as a fallback",
}

var checkConstraint = regexp.MustCompile(`relation "([a-z_]+)" violates check constraint "([a-z_]+)"`)

// storeError maps the store's sentinel errors: a unique violation is 409; a
// foreign key is 409 when deleting (the row is still referenced) and 422
// otherwise (a referenced row does not exist); a CHECK is 422; not found
// 404; Postgres unreachable 503 with Retry-After.
func storeError(method string, err error) *apiError {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case errors.Is(err, store.ErrUnavailable):
		return &apiError{status: http.StatusServiceUnavailable, code: codeDBUnavailable, retryAfter: 5,
			message: "the database is unavailable; the inference plane keeps serving, try again shortly"}
	case errors.Is(err, store.ErrNotFound):
		return notFound("object").(*apiError)
	case errors.Is(err, store.ErrConflict):
		for name, f := range constraintFields {
			if strings.HasSuffix(msg, ": "+name) {
				return conflict(f[1], detail(f[0], "taken")).(*apiError)
			}
		}
		return conflict("the write conflicts with a stored row").(*apiError)
	case errors.Is(err, store.ErrReferenced):
		if method == http.MethodDelete {
			return conflict("other objects still refer to this one; delete or change them first").(*apiError)
		}
		return invalid("a referenced object does not exist").(*apiError)
	case errors.Is(err, store.ErrInvalid):
		for _, m := range fallbackRules {
			if strings.HasSuffix(msg, ": "+m) {
				return invalid("fallbacks: "+m, "fallbacks").(*apiError)
			}
		}
		if m := checkConstraint.FindStringSubmatch(msg); m != nil {
			field := strings.TrimSuffix(strings.TrimPrefix(m[2], m[1]+"_"), "_check")
			if field != "" && field != m[1] {
				return invalid(field+": the value is not allowed", field).(*apiError)
			}
		}
		return invalid("the values break a rule of the schema").(*apiError)
	}
	return nil
}

// writeError writes err as the shared Error body. Errors that are neither an
// apiError nor a store sentinel are 500s: the detail goes to the log (store
// and handler errors never carry secrets), the caller gets "internal error".
func writeError(log *slog.Logger, w http.ResponseWriter, r *http.Request, err error) {
	var e *apiError
	if !errors.As(err, &e) {
		if e = storeError(r.Method, err); e == nil {
			log.ErrorContext(r.Context(), "control api request failed", "method", r.Method, "path", r.URL.Path, "err", err)
			e = &apiError{status: http.StatusInternalServerError, code: codeInternal, message: "internal error"}
		} else if e.code == codeDBUnavailable {
			log.WarnContext(r.Context(), "control api: database unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		}
	}
	body := models.Error{Error: models.ErrorInfo{Code: e.code, Message: e.message}}
	if len(e.details) > 0 {
		body.Error.Details = &e.details
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	if e.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	w.WriteHeader(e.status)
	json.NewEncoder(w).Encode(body) // the client may be gone
}
