-- +goose Up
-- Policies belong to someone. A policy is owned by a team (team_id set: only
-- that team's projects may use it) or by the system (team_id NULL: attached
-- by system admins, or by teams a system admin has shared it with in
-- policy_team_shares). Host keys are shared by system admins with teams in
-- host_key_team_shares, and a team's policy may list only host keys shared
-- with its team — the database holds that rule, so no path (API, console,
-- relay apply) can make a team's requests spend another team's host keys.

ALTER TABLE policies ADD COLUMN team_id uuid REFERENCES teams (id) ON DELETE CASCADE;
CREATE INDEX policies_team_idx ON policies (team_id);

-- A team's policy lists its host keys; "every host key" is a system policy's grant.
ALTER TABLE policies ADD CONSTRAINT policies_team_host_keys_check CHECK (team_id IS NULL OR NOT all_host_keys);

CREATE TABLE policy_team_shares (
    policy_id   uuid NOT NULL REFERENCES policies (id) ON DELETE CASCADE,
    team_id     uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (policy_id, team_id)
);
CREATE INDEX policy_team_shares_team_idx ON policy_team_shares (team_id);

CREATE TABLE host_key_team_shares (
    host_key_id  uuid NOT NULL REFERENCES host_keys (id) ON DELETE CASCADE,
    team_id      uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (host_key_id, team_id)
);
CREATE INDEX host_key_team_shares_team_idx ON host_key_team_shares (team_id);

-- policy_host_keys_shared refuses a host-key grant of a team's policy when
-- the host key is not shared with that team (check_violation: a 422).
-- +goose StatementBegin
CREATE FUNCTION relay_policy_host_key_shared() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    owner uuid;
BEGIN
    SELECT team_id INTO owner FROM policies WHERE id = NEW.policy_id;
    IF owner IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM host_key_team_shares WHERE host_key_id = NEW.host_key_id AND team_id = owner
    ) THEN
        RAISE EXCEPTION 'host key % is not shared with the team that owns policy %', NEW.host_key_id, NEW.policy_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'policy_host_keys_shared';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER policy_host_keys_shared BEFORE INSERT OR UPDATE ON policy_host_keys
    FOR EACH ROW EXECUTE FUNCTION relay_policy_host_key_shared();

-- Taking a share back takes the host key out of the team's policies at once.
-- +goose StatementBegin
CREATE FUNCTION relay_host_key_unshared() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM policy_host_keys ph
    USING policies p
    WHERE ph.policy_id = p.id AND p.team_id = OLD.team_id AND ph.host_key_id = OLD.host_key_id;
    RETURN OLD;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER host_key_team_shares_unshared AFTER DELETE ON host_key_team_shares
    FOR EACH ROW EXECUTE FUNCTION relay_host_key_unshared();

-- A policy's owner does not change (a team's policy given to the system, or
-- to another team, would carry grants made under the old owner's rules).
-- +goose StatementBegin
CREATE FUNCTION relay_policy_owner_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.team_id IS DISTINCT FROM OLD.team_id THEN
        RAISE EXCEPTION 'the owner of policy % cannot change', OLD.id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'policies_owner_fixed';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- Existing policies get an owner by where they are used: by relay keys,
-- service accounts and policy bindings of exactly one team → that team (and
-- the host keys it lists are shared with the team, so nothing it spends
-- today changes); by two or more teams, by none, or granting every host key
-- → the system, shared with every team that uses it (so those teams' admins
-- can keep attaching it).
-- +goose StatementBegin
DO $$
DECLARE
    n_team int;
    n_shared int;
    n_policy_shares int;
    n_unused int;
    n_key_shares int;
BEGIN
    CREATE TEMP TABLE policy_use ON COMMIT DROP AS
        SELECT DISTINCT u.policy_id, p.team_id
        FROM (
            SELECT policy_id, project_id FROM relay_keys WHERE policy_id IS NOT NULL
            UNION ALL SELECT policy_id, project_id FROM service_accounts WHERE policy_id IS NOT NULL
            UNION ALL SELECT policy_id, project_id FROM policy_bindings
        ) u
        JOIN projects p ON p.id = u.project_id;

    CREATE TEMP TABLE policy_one_team ON COMMIT DROP AS
        SELECT u.policy_id, min(u.team_id::text)::uuid AS team_id
        FROM policy_use u JOIN policies po ON po.id = u.policy_id
        WHERE NOT po.all_host_keys
        GROUP BY u.policy_id
        HAVING count(*) = 1;

    UPDATE policies po SET team_id = o.team_id FROM policy_one_team o WHERE po.id = o.policy_id;
    GET DIAGNOSTICS n_team = ROW_COUNT;

    INSERT INTO host_key_team_shares (host_key_id, team_id)
        SELECT DISTINCT ph.host_key_id, o.team_id
        FROM policy_one_team o JOIN policy_host_keys ph ON ph.policy_id = o.policy_id
        ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS n_key_shares = ROW_COUNT;

    INSERT INTO policy_team_shares (policy_id, team_id)
        SELECT u.policy_id, u.team_id FROM policy_use u
        WHERE u.policy_id NOT IN (SELECT policy_id FROM policy_one_team)
        ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS n_policy_shares = ROW_COUNT;

    SELECT count(DISTINCT policy_id) INTO n_shared FROM policy_team_shares;
    SELECT count(*) INTO n_unused FROM policies WHERE id NOT IN (SELECT policy_id FROM policy_use);

    RAISE NOTICE 'policy owners: % policies now owned by the one team that uses them (% host key shares made for them); % system policies shared with the teams that use them (% shares); % unused policies are system policies',
        n_team, n_key_shares, n_shared, n_policy_shares, n_unused;
END;
$$;
-- +goose StatementEnd

-- Made after the owners above were set.
CREATE TRIGGER policies_owner_fixed BEFORE UPDATE OF team_id ON policies
    FOR EACH ROW EXECUTE FUNCTION relay_policy_owner_fixed();

-- +goose Down
DROP TRIGGER policies_owner_fixed ON policies;
DROP FUNCTION relay_policy_owner_fixed();
DROP TRIGGER host_key_team_shares_unshared ON host_key_team_shares;
DROP FUNCTION relay_host_key_unshared();
DROP TRIGGER policy_host_keys_shared ON policy_host_keys;
DROP FUNCTION relay_policy_host_key_shared();
DROP TABLE host_key_team_shares;
DROP TABLE policy_team_shares;
ALTER TABLE policies DROP CONSTRAINT policies_team_host_keys_check;
ALTER TABLE policies DROP COLUMN team_id;
