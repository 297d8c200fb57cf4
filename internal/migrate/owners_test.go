package migrate_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/relay-llm/relay/migrations"
)

// TestMigrate_PolicyOwners runs 00007 over a catalog made under 00006: a
// policy used by one team becomes that team's (its host keys shared with
// the team); one used by two teams, one used nowhere and one granting every
// host key stay system policies, shared with the teams that use them.
func TestMigrate_PolicyOwners(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := emptyDB(t)
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 6); err != nil {
		t.Fatal(err)
	}
	_, err = pool.Exec(ctx, `
INSERT INTO teams (id, slug) VALUES ('00000000-0000-0000-0000-00000000000a', 'ta'), ('00000000-0000-0000-0000-00000000000b', 'tb');
INSERT INTO projects (id, team_id, slug) VALUES
  ('00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-00000000000a', 'a1'),
  ('00000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-00000000000b', 'b1');
INSERT INTO hosts (id, slug, provider, base_url) VALUES ('00000000-0000-0000-0000-0000000000f1', 'h', 'openai', 'https://api.openai.com/v1');
INSERT INTO host_keys (id, host_id, slug, secret_ref) VALUES ('00000000-0000-0000-0000-0000000000e1', '00000000-0000-0000-0000-0000000000f1', 'k', 'env:K');
INSERT INTO policies (id, slug, all_host_keys) VALUES
  ('00000000-0000-0000-0000-000000000001', 'one-team', false),
  ('00000000-0000-0000-0000-000000000002', 'two-teams', false),
  ('00000000-0000-0000-0000-000000000003', 'unused', false),
  ('00000000-0000-0000-0000-000000000004', 'every-key', true);
INSERT INTO policy_host_keys (policy_id, host_key_id) VALUES
  ('00000000-0000-0000-0000-000000000001', '00000000-0000-0000-0000-0000000000e1');
INSERT INTO service_accounts (project_id, slug, policy_id) VALUES
  ('00000000-0000-0000-0000-0000000000a1', 'sa1', '00000000-0000-0000-0000-000000000001'),
  ('00000000-0000-0000-0000-0000000000a1', 'sa2', '00000000-0000-0000-0000-000000000002'),
  ('00000000-0000-0000-0000-0000000000a1', 'sa4', '00000000-0000-0000-0000-000000000004');
WITH g AS (INSERT INTO groups (slug) VALUES ('g') RETURNING id)
INSERT INTO policy_bindings (project_id, policy_id, group_id)
  SELECT '00000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-000000000002', g.id FROM g;
`)
	if err != nil {
		t.Fatalf("seed the 00006 catalog: %v", err)
	}
	if _, err := p.UpTo(ctx, 7); err != nil {
		t.Fatal(err)
	}
	owner := func(slug string) string {
		var team *string
		if err := pool.QueryRow(ctx, `SELECT t.slug FROM policies p LEFT JOIN teams t ON t.id = p.team_id WHERE p.slug = $1`, slug).Scan(&team); err != nil {
			t.Fatal(err)
		}
		if team == nil {
			return "system"
		}
		return *team
	}
	shares := func(q string) []string {
		rows, err := pool.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	for slug, want := range map[string]string{"one-team": "ta", "two-teams": "system", "unused": "system", "every-key": "system"} {
		if got := owner(slug); got != want {
			t.Errorf("owner of %s = %s, want %s", slug, got, want)
		}
	}
	if got := shares(`SELECT p.slug || '>' || t.slug FROM policy_team_shares s JOIN policies p ON p.id = s.policy_id JOIN teams t ON t.id = s.team_id ORDER BY 1`); len(got) != 3 ||
		got[0] != "every-key>ta" || got[1] != "two-teams>ta" || got[2] != "two-teams>tb" {
		t.Errorf("policy shares = %v, want every-key>ta two-teams>ta two-teams>tb", got)
	}
	if got := shares(`SELECT k.slug || '>' || t.slug FROM host_key_team_shares s JOIN host_keys k ON k.id = s.host_key_id JOIN teams t ON t.id = s.team_id`); len(got) != 1 || got[0] != "k>ta" {
		t.Errorf("host key shares = %v, want k>ta", got)
	}
	if got := shares(`SELECT policy_id::text FROM policy_host_keys`); len(got) != 1 {
		t.Errorf("policy host keys after the migration = %v, want the one grant kept", got)
	}
}
