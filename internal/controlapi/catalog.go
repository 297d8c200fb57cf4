package controlapi

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/store"
)

// The catalog — hosts, models, bindings, rate limits, policies and their
// grants — is shared by every project: any role binding, at any scope, reads
// it (rbac.ReadCatalog); only a system-wide admin changes it. Host keys are
// read with Read at system scope only: which credentials exist is operators'
// business.

// systemRow reads a system-scoped row for a handler: 404 when it does not
// exist or the caller lacks read, 403 when write is asked and the caller
// may read but not manage the system.
func systemRow[R any](ctx context.Context, kind string, read rbac.Verb, write bool, get func() (R, error)) (*caller, R, error) {
	var zero R
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, zero, err
	}
	if !c.Can(read, rbac.System()) {
		return nil, zero, notFound(kind)
	}
	r, err := get()
	if r, err = found(kind, r, err); err != nil {
		return nil, zero, err
	}
	if write {
		if err := can403(c, rbac.ManageSystem, rbac.System()); err != nil {
			return nil, zero, err
		}
	}
	return c, r, nil
}

// systemWrite checks that the caller may create system-scoped rows.
func systemWrite(ctx context.Context) (*caller, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	return c, can403(c, rbac.ManageSystem, rbac.System())
}

// systemList returns the caller and whether it may list a system-scoped kind
// (a caller that may not gets an empty list, not an error).
func systemList(ctx context.Context, read rbac.Verb) (*caller, bool, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, false, err
	}
	return c, c.Can(read, rbac.System()), nil
}

// Hosts -----------------------------------------------------------------------

// ListHosts is the operation of the same name in openapi/control.yaml.
func (v *Service) ListHosts(ctx context.Context, params models.ListHostsParams) (out models.HostList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListHosts")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	_, ok, err := systemList(ctx, rbac.ReadCatalog)
	if err != nil || !ok {
		return models.HostList{Items: []models.Host{}}, err
	}
	rows, err := s.st.Hosts().List(ctx, store.Page{After: after, Limit: fetch})
	out.Items, out.NextCursor, err = pageOf(rows, err, fetch, func(r store.Host) uuid.UUID { return r.ID }, hostOut)
	return out, err
}

// checkBaseURL refuses a base URL at Relay's own listeners, at a metadata
// address, or outside RELAY_UPSTREAM_ALLOW: a 422 naming base_url. Names
// are not looked up here (the dialer checks what they resolve to on every
// connect), so a write never waits on DNS.
func (s *Server) checkBaseURL(ctx context.Context, raw string) error {
	if err := s.cfg.Egress.CheckURL(ctx, raw, nil); err != nil {
		return invalid("base_url: "+err.Error(), "base_url")
	}
	return nil
}

// CreateHost is the operation of the same name in openapi/control.yaml.
func (v *Service) CreateHost(ctx context.Context, body *models.HostCreate) (out models.Host, err error) {
	s, ctx, done, err := v.enter(ctx, "CreateHost")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := systemWrite(ctx)
	if err != nil {
		return out, err
	}
	b := body
	if err := s.checkBaseURL(ctx, b.BaseURL); err != nil {
		return out, err
	}
	fwd, err := forwardHeadersIn(b.ForwardHeaders)
	if err != nil {
		return out, err
	}
	prof, params, err := s.profileIn(ctx, deref(b.Profile, ""), b.ProfileParams)
	if err != nil {
		return out, err
	}
	row, err := s.st.Hosts().Create(ctx, c.actor, store.Host{
		Profile: prof, ProfileParams: params,
		Slug: b.Slug, Name: deref(b.Name, ""), Provider: string(b.Provider), BaseURL: b.BaseURL,
		Enabled: deref(b.Enabled, true), ConnectTimeoutMs: deref(b.ConnectTimeoutMs, 5000),
		FirstByteTimeoutMs: deref(b.FirstByteTimeoutMs, 60000), IdleTimeoutMs: deref(b.IdleTimeoutMs, 60000),
		TotalTimeoutMs: deref(b.TotalTimeoutMs, 600000), ForwardHeaders: fwd,
		BreakerServerFailures: b.BreakerServerFailures, BreakerNetworkFailures: b.BreakerNetworkFailures,
	})
	if err != nil {
		return out, err
	}
	return hostOut(row), nil
}

// GetHost is the operation of the same name in openapi/control.yaml.
func (v *Service) GetHost(ctx context.Context, id uuid.UUID) (out models.Host, err error) {
	s, ctx, done, err := v.enter(ctx, "GetHost")
	if err != nil {
		return out, err
	}
	defer done(&err)
	_, row, err := systemRow(ctx, "host", rbac.ReadCatalog, false, func() (store.Host, error) { return s.st.Hosts().Get(ctx, id) })
	if err != nil {
		return out, err
	}
	return hostOut(row), nil
}

// UpdateHost is the operation of the same name in openapi/control.yaml.
func (v *Service) UpdateHost(ctx context.Context, id uuid.UUID, body *models.HostUpdate) (out models.Host, err error) {
	s, ctx, done, err := v.enter(ctx, "UpdateHost")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, _, err := systemRow(ctx, "host", rbac.ReadCatalog, true, func() (store.Host, error) { return s.st.Hosts().Get(ctx, id) })
	if err != nil {
		return out, err
	}
	b := body
	if b.BaseURL != nil {
		if err := s.checkBaseURL(ctx, *b.BaseURL); err != nil {
			return out, err
		}
	}
	var fwd []string
	if b.ForwardHeaders != nil {
		if fwd, err = forwardHeadersIn(b.ForwardHeaders); err != nil {
			return out, err
		}
	}
	row, err := s.st.Hosts().Modify(ctx, c.actor, id, func(r *store.Host) error {
		set(&r.Slug, b.Slug)
		set(&r.Name, b.Name)
		if b.Provider != nil {
			r.Provider = string(*b.Provider)
		}
		set(&r.BaseURL, b.BaseURL)
		set(&r.Enabled, b.Enabled)
		set(&r.ConnectTimeoutMs, b.ConnectTimeoutMs)
		set(&r.FirstByteTimeoutMs, b.FirstByteTimeoutMs)
		set(&r.IdleTimeoutMs, b.IdleTimeoutMs)
		set(&r.TotalTimeoutMs, b.TotalTimeoutMs)
		if fwd != nil {
			r.ForwardHeaders = fwd
		}
		if b.BreakerServerFailures.IsSpecified() {
			r.BreakerServerFailures = b.BreakerServerFailures.Pointer()
		}
		if b.BreakerNetworkFailures.IsSpecified() {
			r.BreakerNetworkFailures = b.BreakerNetworkFailures.Pointer()
		}
		if b.Profile == nil && b.ProfileParams == nil {
			return nil
		}
		// The profile and its parameters are checked together, as they
		// will be stored.
		prof := deref(b.Profile, r.Profile)
		in := b.ProfileParams
		if in == nil {
			old := models.ProfileParams(profileParamsOut(r.ProfileParams))
			in = &old
		}
		var err error
		r.Profile, r.ProfileParams, err = s.profileIn(ctx, prof, in)
		return err
	})
	if row, err = found("host", row, err); err != nil {
		return out, err
	}
	return hostOut(row), nil
}

// DeleteHost is the operation of the same name in openapi/control.yaml.
func (v *Service) DeleteHost(ctx context.Context, id uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "DeleteHost")
	if err != nil {
		return err
	}
	defer done(&err)
	c, _, err := systemRow(ctx, "host", rbac.ReadCatalog, true, func() (store.Host, error) { return s.st.Hosts().Get(ctx, id) })
	if err != nil {
		return err
	}
	if _, err := found("host", struct{}{}, s.st.Hosts().Delete(ctx, c.actor, id)); err != nil {
		return err
	}
	return nil
}

// set copies *p into *dst when the PATCH body has the field.
func set[T any](dst *T, p *T) {
	if p != nil {
		*dst = *p
	}
}

// Models ----------------------------------------------------------------------

// ListModels is the operation of the same name in openapi/control.yaml.
func (v *Service) ListModels(ctx context.Context, params models.ListModelsParams) (out models.ModelList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListModels")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	_, ok, err := systemList(ctx, rbac.ReadCatalog)
	if err != nil || !ok {
		return models.ModelList{Items: []models.Model{}}, err
	}
	rows, err := s.st.Models().List(ctx, store.Page{After: after, Limit: fetch})
	out.Items, out.NextCursor, err = pageOf(rows, err, fetch, func(r store.Model) uuid.UUID { return r.ID }, modelOut)
	return out, err
}

// CreateModel is the operation of the same name in openapi/control.yaml.
func (v *Service) CreateModel(ctx context.Context, body *models.ModelCreate) (out models.Model, err error) {
	s, ctx, done, err := v.enter(ctx, "CreateModel")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := systemWrite(ctx)
	if err != nil {
		return out, err
	}
	b := body
	kind, strategy := models.ModelKindChat, models.ModelRouteStrategyPriority
	set(&kind, b.Kind)
	set(&strategy, b.Strategy)
	fallbacks := deref(b.Fallbacks, []uuid.UUID{})
	if err := s.checkFallbacks(ctx, uuid.Nil, string(kind), fallbacks); err != nil {
		return out, err
	}
	row, err := s.st.Models().Create(ctx, c.actor, store.Model{
		Name: b.Name, Provider: deref(b.Provider, ""), Kind: string(kind), ContextWindow: deref(b.ContextWindow, 0),
		MaxOutputTokens: deref(b.MaxOutputTokens, 4096), SupportsTools: deref(b.SupportsTools, true),
		SupportsVision: deref(b.SupportsVision, false), SupportsJSON: deref(b.SupportsJSON, true),
		SupportsThinking: deref(b.SupportsThinking, false), Strategy: string(strategy), Fallbacks: fallbacks,
	})
	if err != nil {
		return out, err
	}
	return modelOut(row), nil
}

// GetModel is the operation of the same name in openapi/control.yaml.
func (v *Service) GetModel(ctx context.Context, id uuid.UUID) (out models.Model, err error) {
	s, ctx, done, err := v.enter(ctx, "GetModel")
	if err != nil {
		return out, err
	}
	defer done(&err)
	_, row, err := systemRow(ctx, "model", rbac.ReadCatalog, false, func() (store.Model, error) { return s.st.Models().Get(ctx, id) })
	if err != nil {
		return out, err
	}
	return modelOut(row), nil
}

// UpdateModel is the operation of the same name in openapi/control.yaml.
func (v *Service) UpdateModel(ctx context.Context, id uuid.UUID, body *models.ModelUpdate) (out models.Model, err error) {
	s, ctx, done, err := v.enter(ctx, "UpdateModel")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, old, err := systemRow(ctx, "model", rbac.ReadCatalog, true, func() (store.Model, error) { return s.st.Models().Get(ctx, id) })
	if err != nil {
		return out, err
	}
	b := body
	if b.Fallbacks != nil || b.Kind != nil {
		kind, fallbacks := old.Kind, old.Fallbacks
		if b.Kind != nil {
			kind = string(*b.Kind)
		}
		if b.Fallbacks != nil {
			fallbacks = *b.Fallbacks
		}
		if err := s.checkFallbacks(ctx, id, kind, fallbacks); err != nil {
			return out, err
		}
	}
	row, err := s.st.Models().Modify(ctx, c.actor, id, func(r *store.Model) error {
		set(&r.Name, b.Name)
		set(&r.Provider, b.Provider)
		if b.Kind != nil {
			r.Kind = string(*b.Kind)
		}
		set(&r.ContextWindow, b.ContextWindow)
		set(&r.MaxOutputTokens, b.MaxOutputTokens)
		set(&r.SupportsTools, b.SupportsTools)
		set(&r.SupportsVision, b.SupportsVision)
		set(&r.SupportsJSON, b.SupportsJSON)
		set(&r.SupportsThinking, b.SupportsThinking)
		if b.Strategy != nil {
			r.Strategy = string(*b.Strategy)
		}
		set(&r.Fallbacks, b.Fallbacks)
		return nil
	})
	if row, err = found("model", row, err); err != nil {
		return out, err
	}
	return modelOut(row), nil
}

// checkFallbacks holds a model's fallback list to the schema's rules with
// errors that name the entry: each must be another existing model of the
// same kind, listed once. self is uuid.Nil for a model not yet created.
// (The schema refuses the same; this says which entry and why.) A change of
// kind is checked against the model's own list here, and against the lists
// that name the model by the schema.
func (s *Server) checkFallbacks(ctx context.Context, self uuid.UUID, kind string, ids []uuid.UUID) error {
	for i, id := range ids {
		field := fmt.Sprintf("fallbacks.%d", i)
		switch {
		case id == self:
			return invalid(field+": a model cannot fall back to itself", field)
		case slices.Contains(ids[:i], id):
			return invalid(field+": the model is listed twice", field)
		}
		m, err := s.st.Models().Get(ctx, id)
		if err != nil {
			return got(m, err).exists(field, "model")
		}
		if m.Kind != kind {
			return invalid(fmt.Sprintf("%s: a %s model cannot fall back to a %s model", field, kind, m.Kind), field)
		}
	}
	return nil
}

// DeleteModel is the operation of the same name in openapi/control.yaml.
func (v *Service) DeleteModel(ctx context.Context, id uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "DeleteModel")
	if err != nil {
		return err
	}
	defer done(&err)
	c, _, err := systemRow(ctx, "model", rbac.ReadCatalog, true, func() (store.Model, error) { return s.st.Models().Get(ctx, id) })
	if err != nil {
		return err
	}
	if _, err := found("model", struct{}{}, s.st.Models().Delete(ctx, c.actor, id)); err != nil {
		return err
	}
	return nil
}

// Bindings --------------------------------------------------------------------

// ListBindings is the operation of the same name in openapi/control.yaml.
func (v *Service) ListBindings(ctx context.Context, params models.ListBindingsParams) (out models.BindingList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListBindings")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	_, ok, err := systemList(ctx, rbac.ReadCatalog)
	if err != nil || !ok {
		return models.BindingList{Items: []models.Binding{}}, err
	}
	rows, err := s.st.Bindings().List(ctx, store.BindingsPage{After: after, ModelID: params.ModelID, HostID: params.HostID, Limit: fetch})
	out.Items, out.NextCursor, err = pageOf(rows, err, fetch, func(r store.Binding) uuid.UUID { return r.ID }, bindingOut)
	return out, err
}

// priceTiers encodes tiers for the jsonb column, checking they ascend.
func priceTiers(tiers *[]models.PriceTier) (json.RawMessage, error) {
	if tiers == nil || len(*tiers) == 0 {
		return json.RawMessage("[]"), nil
	}
	for i := 1; i < len(*tiers); i++ {
		if (*tiers)[i].AboveInputTokens <= (*tiers)[i-1].AboveInputTokens {
			f := fmt.Sprintf("price_tiers.%d.above_input_tokens", i)
			return nil, invalid(f+": tiers must ascend by above_input_tokens", f)
		}
	}
	b, err := json.Marshal(*tiers)
	if err != nil {
		return nil, fmt.Errorf("encode price tiers: %w", err)
	}
	return b, nil
}

// unitPrices encodes unit prices for the jsonb column: size and quality
// are for images only, and no two entries price the same thing.
func unitPrices(ups *[]models.UnitPrice) (json.RawMessage, error) {
	if ups == nil || len(*ups) == 0 {
		return json.RawMessage("[]"), nil
	}
	seen := map[[3]string]bool{}
	for i, u := range *ups {
		size, quality := deref(u.Size, ""), deref(u.Quality, "")
		if u.Unit != models.UnitPriceUnitImage && (size != "" || quality != "") {
			f := fmt.Sprintf("unit_prices.%d", i)
			return nil, invalid(f+": size and quality are for unit image only", f)
		}
		k := [3]string{string(u.Unit), size, quality}
		if seen[k] {
			f := fmt.Sprintf("unit_prices.%d", i)
			return nil, invalid(f+": another entry prices the same unit, size and quality", f)
		}
		seen[k] = true
	}
	b, err := json.Marshal(*ups)
	if err != nil {
		return nil, fmt.Errorf("encode unit prices: %w", err)
	}
	return b, nil
}

// CreateBinding is the operation of the same name in openapi/control.yaml.
func (v *Service) CreateBinding(ctx context.Context, body *models.BindingCreate) (out models.Binding, err error) {
	s, ctx, done, err := v.enter(ctx, "CreateBinding")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := systemWrite(ctx)
	if err != nil {
		return out, err
	}
	b := body
	if err := got(s.st.Models().Get(ctx, b.ModelID)).exists("model_id", "model"); err != nil {
		return out, err
	}
	if err := got(s.st.Hosts().Get(ctx, b.HostID)).exists("host_id", "host"); err != nil {
		return out, err
	}
	tiers, err := priceTiers(b.PriceTiers)
	if err != nil {
		return out, err
	}
	units, err := unitPrices(b.UnitPrices)
	if err != nil {
		return out, err
	}
	row, err := s.st.Bindings().Create(ctx, c.actor, store.Binding{
		ModelID: b.ModelID, HostID: b.HostID, Shape: string(b.Shape), UpstreamModel: b.UpstreamModel,
		Position: deref(b.Position, 0), Enabled: deref(b.Enabled, true), InputPrice: deref(b.InputPrice, 0),
		OutputPrice: deref(b.OutputPrice, 0), CachedInputPrice: deref(b.CachedInputPrice, 0),
		CacheWritePrice: deref(b.CacheWritePrice, 0), ReasoningPrice: b.ReasoningPrice, PriceTiers: tiers,
		Weight: deref(b.Weight, 1), UnitPrices: units,
	})
	if err != nil {
		return out, err
	}
	return bindingOut(row), nil
}

// GetBinding is the operation of the same name in openapi/control.yaml.
func (v *Service) GetBinding(ctx context.Context, id uuid.UUID) (out models.Binding, err error) {
	s, ctx, done, err := v.enter(ctx, "GetBinding")
	if err != nil {
		return out, err
	}
	defer done(&err)
	_, row, err := systemRow(ctx, "binding", rbac.ReadCatalog, false, func() (store.Binding, error) { return s.st.Bindings().Get(ctx, id) })
	if err != nil {
		return out, err
	}
	return bindingOut(row), nil
}

// UpdateBinding is the operation of the same name in openapi/control.yaml.
func (v *Service) UpdateBinding(ctx context.Context, id uuid.UUID, body *models.BindingUpdate) (out models.Binding, err error) {
	s, ctx, done, err := v.enter(ctx, "UpdateBinding")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, _, err := systemRow(ctx, "binding", rbac.ReadCatalog, true, func() (store.Binding, error) { return s.st.Bindings().Get(ctx, id) })
	if err != nil {
		return out, err
	}
	b := body
	var tiers, units json.RawMessage
	if b.PriceTiers != nil {
		if tiers, err = priceTiers(b.PriceTiers); err != nil {
			return out, err
		}
	}
	if b.UnitPrices != nil {
		if units, err = unitPrices(b.UnitPrices); err != nil {
			return out, err
		}
	}
	row, err := s.st.Bindings().Modify(ctx, c.actor, id, func(r *store.Binding) error {
		if b.Shape != nil {
			r.Shape = string(*b.Shape)
		}
		set(&r.UpstreamModel, b.UpstreamModel)
		set(&r.Position, b.Position)
		set(&r.Weight, b.Weight)
		set(&r.Enabled, b.Enabled)
		set(&r.InputPrice, b.InputPrice)
		set(&r.OutputPrice, b.OutputPrice)
		set(&r.CachedInputPrice, b.CachedInputPrice)
		set(&r.CacheWritePrice, b.CacheWritePrice)
		if b.ReasoningPrice.IsSpecified() {
			r.ReasoningPrice = b.ReasoningPrice.Pointer()
		}
		if tiers != nil {
			r.PriceTiers = tiers
		}
		if units != nil {
			r.UnitPrices = units
		}
		return nil
	})
	if row, err = found("binding", row, err); err != nil {
		return out, err
	}
	return bindingOut(row), nil
}

// DeleteBinding is the operation of the same name in openapi/control.yaml.
func (v *Service) DeleteBinding(ctx context.Context, id uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "DeleteBinding")
	if err != nil {
		return err
	}
	defer done(&err)
	c, _, err := systemRow(ctx, "binding", rbac.ReadCatalog, true, func() (store.Binding, error) { return s.st.Bindings().Get(ctx, id) })
	if err != nil {
		return err
	}
	if _, err := found("binding", struct{}{}, s.st.Bindings().Delete(ctx, c.actor, id)); err != nil {
		return err
	}
	return nil
}
