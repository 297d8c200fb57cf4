package ui

import (
	"net/http"
	"strconv"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/rbac"
)

// Relay keys: minted on a form whose answer shows the key once (with a copy
// button) and is never cached; lists show the display prefix only.

func (h *Handler) relayKeyKind() *kind {
	k := &kind{slug: "relay-keys", search: "name or key prefix", title: "Relay keys", one: "relay key",
		write:   func(p *controlapi.Principal) bool { return p.CanAnywhere(rbac.MintOwn) },
		columns: []column{{Title: "Name"}, {Title: "Key"}, {Title: "Project"}, {Title: "Owner"}, {Title: "Status"}, {Title: "Created"}}}
	k.list = func(p *page, term string, limit int32, cursor *string) ([]row, *string, error) {
		l, err := listOrSearch(p, term, models.ListRelayKeysParams{Limit: &limit, Cursor: cursor}, h.svc.ListRelayKeys, h.svc.SearchRelayKeys)
		if err != nil {
			return nil, nil, err
		}
		projects, accounts := labels(h.projectOptions(p)), labels(h.serviceAccountOptions(p))
		canWrite := p.who.CanAnywhere(rbac.MintOwn)
		rows := make([]row, len(l.Items))
		for i, x := range l.Items {
			st := cell{Text: string(x.Status), Badge: "ok"}
			if x.Status != models.CredentialStatusActive {
				st.Badge = "bad"
			}
			rows[i] = row{ID: x.ID.String(), Cells: []cell{{Text: x.Name}, {Text: x.DisplayPrefix + "…", Mono: true}, {Text: projects.of(x.ProjectID), Mono: true},
				{Text: owner(accounts, x.ServiceAccountID, x.UserID), Mono: true}, st, {Text: x.CreatedAt.UTC().Format("2006-01-02 15:04")}}}
			if canWrite && x.Status == models.CredentialStatusActive {
				rows[i].Actions = []rowAction{
					{Href: "/relay-keys/" + x.ID.String() + "/rotate", Label: "Rotate",
						Confirm: "Rotate " + x.Name + "? A new key is shown once; the old one keeps working for an hour."},
					{Href: "/relay-keys/" + x.ID.String() + "/revoke", Label: "Revoke", Danger: true,
						Confirm: "Revoke " + x.Name + "? Requests with it are refused at once."}}
			}
		}
		return rows, l.NextCursor, nil
	}
	k.fields = func(p *page, v *vals, _ bool) ([]field, error) {
		return []field{
			{Name: "name", Label: "Name", Kind: "text", Value: v.str("name"), Required: true, Help: "Say what uses it: ci-nightly, support-bot."},
			selectOf("project_id", "Project", v.str("project_id"), withNone("Choose a project", h.projectOptions(p))),
			selectOf("service_account_id", "Service account", v.str("service_account_id"), withNone("None: the key is yours", h.serviceAccountOptions(p))),
			selectOf("policy_id", "Policy", v.str("policy_id"), withNone("None (the service account's or the project's)", h.policyOptions(p))),
		}, nil
	}
	k.create = func(p *page, v *vals) error {
		b := models.RelayKeyCreate{Name: v.optStr("name"), ProjectID: v.id("project_id", "project"), ServiceAccountID: v.optID("service_account_id"), PolicyID: v.optID("policy_id")}
		if b.ServiceAccountID == nil {
			me := p.who.UserID
			b.UserID = &me
		}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPost, "/api/relay-keys", b); err != nil {
			return err
		}
		created, err := h.svc.CreateRelayKey(p.ctx, &b)
		if err != nil {
			return err
		}
		p.render(http.StatusCreated, "Relay key created", k.slug, minted(mintedView{Name: created.RelayKey.Name, Secret: created.Secret, Prefix: created.RelayKey.DisplayPrefix}))
		return errRendered
	}
	return k
}

func owner(accounts labelMap, sa, user *uuid.UUID) string {
	if sa != nil {
		return accounts.of(*sa)
	}
	return subject(nil, user, nil)
}

func (h *Handler) revokeRelayKey(p *page) {
	id, ok := pathID(p)
	if !ok {
		return
	}
	if _, err := h.svc.RevokeRelayKey(p.ctx, id); err != nil {
		h.failErr(p, err)
		return
	}
	redirect(p.w, p.r, "/relay-keys")
}

// rotateGrace is how long a rotated relay key keeps working beside its successor.
const rotateGrace = 3600

// rotateRelayKey mints the key's successor and shows it once; the old key
// works for rotateGrace more seconds.
func (h *Handler) rotateRelayKey(p *page) {
	id, ok := pathID(p)
	if !ok {
		return
	}
	body := models.RotateRelayKeyJSONRequestBody{GraceSeconds: rotateGrace}
	r, err := h.svc.RotateRelayKey(p.ctx, id, &body)
	if err != nil {
		h.failErr(p, err)
		return
	}
	p.render(http.StatusCreated, "Relay key rotated", "relay-keys", minted(mintedView{Name: r.RelayKey.Name, Secret: r.Secret, Prefix: r.RelayKey.DisplayPrefix}))
}

// testHostKey makes one cheap call with a host key and shows the outcome
// (never the secret).
func (h *Handler) testHostKey(p *page) {
	id, ok := pathID(p)
	if !ok {
		return
	}
	r, err := h.svc.TestHostKey(p.ctx, id)
	if err != nil {
		h.failErr(p, err)
		return
	}
	v := testedView{OK: r.Ok, Message: r.Message, Latency: strconv.Itoa(int(r.LatencyMs)) + " ms"}
	if r.UpstreamStatus != nil {
		v.Status = strconv.Itoa(int(*r.UpstreamStatus))
	}
	p.render(http.StatusOK, "Host key test", "host-keys", tested(v))
}

// labels names rows by id for a table's cells.
type labelMap map[string]string

func labels(opts []option) labelMap {
	m := make(labelMap, len(opts))
	for _, o := range opts {
		m[o.Value] = o.Label
	}
	return m
}

func (m labelMap) of(id uuid.UUID) string {
	if l, ok := m[id.String()]; ok {
		return l
	}
	return short(id)
}

// The option lists of forms and the names in tables: the first page of at
// most 500 rows of a kind — the catalog and tenancy kinds a form picks from
// are small; a kind past that shows ids.
const optionLimit = int32(500)

func (h *Handler) hostOptions(p *page) []option {
	l := optionLimit
	resp, err := h.svc.ListHosts(p.ctx, models.ListHostsParams{Limit: &l})
	return options(resp.Items, err, func(x models.Host) option { return option{Value: x.ID.String(), Label: x.Slug} })
}

func (h *Handler) modelOptions(p *page) []option {
	l := optionLimit
	resp, err := h.svc.ListModels(p.ctx, models.ListModelsParams{Limit: &l})
	return options(resp.Items, err, func(x models.Model) option { return option{Value: x.ID.String(), Label: x.Name} })
}

func (h *Handler) hostKeyOptions(p *page) []option {
	l := optionLimit
	resp, err := h.svc.ListHostKeys(p.ctx, models.ListHostKeysParams{Limit: &l})
	hosts := labels(h.hostOptions(p))
	return options(resp.Items, err, func(x models.HostKey) option {
		return option{Value: x.ID.String(), Label: hosts.of(x.HostID) + " / " + x.Slug}
	})
}

func (h *Handler) rateLimitOptions(p *page) []option {
	l := optionLimit
	resp, err := h.svc.ListRateLimits(p.ctx, models.ListRateLimitsParams{Limit: &l})
	return options(resp.Items, err, func(x models.RateLimit) option { return option{Value: x.ID.String(), Label: x.Slug} })
}

func (h *Handler) policyOptions(p *page) []option {
	l := optionLimit
	resp, err := h.svc.ListPolicies(p.ctx, models.ListPoliciesParams{Limit: &l})
	return options(resp.Items, err, func(x models.Policy) option { return option{Value: x.ID.String(), Label: x.Slug} })
}

func (h *Handler) teamOptions(p *page) []option {
	l := optionLimit
	resp, err := h.svc.ListTeams(p.ctx, models.ListTeamsParams{Limit: &l})
	return options(resp.Items, err, func(x models.Team) option { return option{Value: x.ID.String(), Label: x.Slug} })
}

func (h *Handler) projectOptions(p *page) []option {
	l := optionLimit
	resp, err := h.svc.ListProjects(p.ctx, models.ListProjectsParams{Limit: &l})
	teams := labels(h.teamOptions(p))
	return options(resp.Items, err, func(x models.Project) option {
		return option{Value: x.ID.String(), Label: teams.of(x.TeamID) + "/" + x.Slug}
	})
}

func (h *Handler) serviceAccountOptions(p *page) []option {
	l := optionLimit
	resp, err := h.svc.ListServiceAccounts(p.ctx, models.ListServiceAccountsParams{Limit: &l})
	return options(resp.Items, err, func(x models.ServiceAccount) option { return option{Value: x.ID.String(), Label: x.Slug} })
}
