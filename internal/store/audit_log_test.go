package store

import (
	"reflect"
	"slices"
	"testing"
)

func xmin(t *testing.T, b *bundle, table string, id any) string {
	t.Helper()
	var x string
	if err := b.s.Pool().QueryRow(b.ctx, "SELECT xmin::text FROM "+table+" WHERE id = $1", id).Scan(&x); err != nil {
		t.Fatal(err)
	}
	return x
}

func TestAudit_SameTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s

	t.Run("store write", func(t *testing.T) {
		h := mk[Host](t)(s.Hosts().Create(ctx, actor, hostRow("own-tx")))
		a := auditRows(t, b, "hosts", h.ID.String())
		if len(a) != 1 || xmin(t, b, "hosts", h.ID) != xmin(t, b, "audit_log", a[0].ID) {
			t.Errorf("host and its audit row were not written by one transaction")
		}
	})

	t.Run("tx groups writes", func(t *testing.T) {
		var team Team
		var project Project
		err := s.InTx(ctx, func(tx *Tx) error {
			var err error
			if team, err = tx.Teams().Create(ctx, "user:42", Team{Slug: "grouped"}); err != nil {
				return err
			}
			project, err = tx.Projects().Create(ctx, "user:42", Project{TeamID: team.ID, Slug: "grouped"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		x := xmin(t, b, "teams", team.ID)
		for _, a := range slices.Concat(auditRows(t, b, "teams", team.ID.String()), auditRows(t, b, "projects", project.ID.String())) {
			if a.Actor != "user:42" || xmin(t, b, "audit_log", a.ID) != x {
				t.Errorf("audit row %d (%s) is not in the team's transaction", a.ID, a.Actor)
			}
		}
		if xmin(t, b, "projects", project.ID) != x {
			t.Error("team and project were written by different transactions")
		}
	})

	t.Run("failed audit rolls the write back", func(t *testing.T) {
		before := countAudit(t, b)
		err := s.InTx(ctx, func(tx *Tx) error {
			if _, err := tx.Hosts().Create(ctx, actor, hostRow("rolled-back")); err != nil {
				return err
			}
			return tx.Audit(ctx, actor, "reboot", "hosts", "x", nil, nil) // not an action
		})
		wantErr(t, err, ErrInvalid)
		_, err = s.Hosts().GetBySlug(ctx, "rolled-back")
		wantErr(t, err, ErrNotFound)
		if countAudit(t, b) != before {
			t.Error("the rolled-back write left an audit row")
		}
	})

	t.Run("audit of a non-row", func(t *testing.T) {
		err := s.InTx(ctx, func(tx *Tx) error { return tx.Audit(ctx, actor, "update", "hosts", "x", 42, nil) })
		if err == nil {
			t.Error("Audit of an int succeeded")
		}
	})
}

// TestAudit_ColumnNames checks that audit rows name every column as the
// schema does, so before/after read like the table, and that no row has a
// json tag that would rename a key.
func TestAudit_ColumnNames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tables := map[string]reflect.Type{
		"teams": reflect.TypeFor[Team](), "projects": reflect.TypeFor[Project](), "users": reflect.TypeFor[User](),
		"groups": reflect.TypeFor[Group](), "group_memberships": reflect.TypeFor[GroupMembership](),
		"service_accounts": reflect.TypeFor[ServiceAccount](), "rate_limits": reflect.TypeFor[RateLimit](),
		"rate_limit_rules": reflect.TypeFor[RateLimitRule](), "hosts": reflect.TypeFor[Host](),
		"models": reflect.TypeFor[Model](), "bindings": reflect.TypeFor[Binding](), "host_keys": reflect.TypeFor[HostKey](),
		"policies": reflect.TypeFor[Policy](), "policy_models": reflect.TypeFor[PolicyModel](),
		"policy_host_keys": reflect.TypeFor[PolicyHostKey](), "policy_model_rate_limits": reflect.TypeFor[PolicyModelRateLimit](),
		"policy_bindings": reflect.TypeFor[PolicyBinding](), "relay_keys": reflect.TypeFor[RelayKey](),
		"inference_tokens": reflect.TypeFor[InferenceToken](), "budgets": reflect.TypeFor[Budget](),
		"role_bindings": reflect.TypeFor[RoleBinding](), "sessions": reflect.TypeFor[Session](),
		"audit_log": reflect.TypeFor[AuditLog](), "usage_events": reflect.TypeFor[UsageEvent](),
	}
	for table, typ := range tables {
		rows, err := b.s.Pool().Query(b.ctx, `SELECT column_name::text FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`, table)
		if err != nil {
			t.Fatal(err)
		}
		var cols []string
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				t.Fatal(err)
			}
			cols = append(cols, c)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		var fields []string
		for i := range typ.NumField() {
			fields = append(fields, columnName(typ.Field(i).Name))
			if tag := typ.Field(i).Tag.Get("json"); tag != "" { // auditJSON keys rows by field name
				t.Errorf("%s.%s has a json tag %q", typ.Name(), typ.Field(i).Name, tag)
			}
		}
		if !slices.Equal(fields, cols) {
			t.Errorf("%s: fields name columns %v, want %v", table, fields, cols)
		}
	}
}
