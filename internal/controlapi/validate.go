package controlapi

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/relay-llm/relay/openapi/controlgen"
)

var validateOptions = &openapi3filter.Options{
	// Authentication happened before; the spec's security only documents it.
	AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
	MultiError:         true,
	// The handlers apply the spec's defaults themselves; left to the
	// validator, a defaulted format=json would hide Accept: text/csv.
	SkipSettingDefaults: true,
}

// validate checks a request against the spec and turns a failure into a 400
// that names the fields. Messages come from the validator's reasons, which
// never carry the offending value (a password or a host key secret must not
// come back in an error).
func validate(ctx context.Context, r *http.Request, route *routers.Route, params map[string]string) error {
	err := openapi3filter.ValidateRequest(ctx, &openapi3filter.RequestValidationInput{
		Request: r, PathParams: params, Route: route, Options: validateOptions,
	})
	if err == nil {
		return nil
	}
	var details []models.ErrorDetail
	collect(err, &details)
	if len(details) == 0 {
		return badRequest("the request does not match the API description")
	}
	msg := details[0].Field + ": " + details[0].Message
	if len(details) > 1 {
		msg += " (and more, see details)"
	}
	return badRequest(msg, details...)
}

var (
	quotedProperty = regexp.MustCompile(`property "([^"]+)" is (unsupported|missing)`)
)

// collect flattens the validator's (multi-)errors into field details.
func collect(err error, out *[]models.ErrorDetail) {
	// A type assertion, not errors.As: MultiError.As matches any error it
	// holds, and a RequestError wraps the MultiError of its schema errors.
	if multi, ok := err.(openapi3.MultiError); ok {
		for _, e := range multi {
			collect(e, out)
		}
		return
	}
	var req *openapi3filter.RequestError
	if errors.As(err, &req) {
		switch {
		case req.Parameter != nil:
			*out = append(*out, detail(req.Parameter.Name, paramReason(req)))
			return
		case req.RequestBody != nil:
			if req.Err == nil {
				*out = append(*out, detail("body", reasonOr(req.Reason, "the request body is invalid")))
				return
			}
			before := len(*out)
			collectSchema(req.Err, out)
			if len(*out) == before {
				*out = append(*out, detail("body", bodyReason(req)))
			}
			return
		}
	}
	var sec *openapi3filter.SecurityRequirementsError
	if errors.As(err, &sec) {
		return
	}
	*out = append(*out, detail("request", "does not match the API description"))
}

func collectSchema(err error, out *[]models.ErrorDetail) {
	if multi, ok := err.(openapi3.MultiError); ok {
		for _, e := range multi {
			collectSchema(e, out)
		}
		return
	}
	var se *openapi3.SchemaError
	if !errors.As(err, &se) {
		return
	}
	path := se.JSONPointer()
	reason := se.Reason
	if m := quotedProperty.FindStringSubmatch(reason); m != nil {
		// additionalProperties and required name the property in the reason;
		// the pointer stops at the object that holds it.
		if len(path) == 0 || path[len(path)-1] != m[1] {
			path = append(path, m[1])
		}
		if m[2] == "unsupported" {
			reason = "unknown field"
		} else {
			reason = "is required"
		}
	}
	field := strings.Join(path, ".")
	if field == "" {
		field = "body"
	}
	*out = append(*out, detail(field, reasonOr(reason, "does not match the schema ("+se.SchemaField+")")))
}

func paramReason(req *openapi3filter.RequestError) string {
	var se *openapi3.SchemaError
	if errors.As(req.Err, &se) && se.Reason != "" {
		return se.Reason
	}
	var pe *openapi3filter.ParseError
	if errors.As(req.Err, &pe) {
		return reasonOr(pe.Reason, "is malformed")
	}
	return reasonOr(req.Reason, "is invalid")
}

func bodyReason(req *openapi3filter.RequestError) string {
	var pe *openapi3filter.ParseError
	if errors.As(req.Err, &pe) {
		return "is not valid JSON"
	}
	return reasonOr(req.Reason, "is invalid")
}

func reasonOr(reason, fallback string) string {
	if reason == "" {
		return fallback
	}
	return reason
}

// paramError is the 400 of a parameter the generated router could not bind
// (a path or query value that is not a UUID …); the validator passes formats
// it has no checker for, so these surface here.
func paramError(err error) error {
	var (
		format   *controlgen.InvalidParamFormatError
		unmarsh  *controlgen.UnmarshalingParamError
		required *controlgen.RequiredParamError
		many     *controlgen.TooManyValuesForParamError
	)
	name := ""
	switch {
	case errors.As(err, &format):
		name = format.ParamName
	case errors.As(err, &unmarsh):
		name = unmarsh.ParamName
	case errors.As(err, &required):
		name = required.ParamName
	case errors.As(err, &many):
		name = many.ParamName
	}
	if name == "" {
		return badRequest("a parameter is malformed")
	}
	return badRequest(name+": is malformed", detail(name, "is malformed"))
}
