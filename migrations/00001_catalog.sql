-- +goose Up
-- The whole data model of DESIGN.md: tenancy, catalog, credentials, policies,
-- rate limits, usage events and the audit log. Every table that the snapshot
-- reads notifies the channel relay_catalog on every write (see relay_notify).

-- +goose StatementBegin
CREATE FUNCTION relay_set_updated_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.updated_at := now();
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- relay_notify sends "<table>:<id>" on channel relay_catalog. Join tables pass
-- the name of the column that identifies the owning row as the trigger argument.
-- +goose StatementBegin
CREATE FUNCTION relay_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    col text := coalesce(TG_ARGV[0], 'id');
    rec record;
    id text;
BEGIN
    IF TG_OP = 'DELETE' THEN
        rec := OLD;
    ELSE
        rec := NEW;
    END IF;
    EXECUTE format('SELECT ($1).%I::text', col) INTO id USING rec;
    PERFORM pg_notify('relay_catalog', TG_TABLE_NAME || ':' || coalesce(id, ''));
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- Tenancy -------------------------------------------------------------------

CREATE TABLE teams (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    slug        text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    name        text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE projects (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    team_id     uuid NOT NULL REFERENCES teams (id) ON DELETE RESTRICT,
    slug        text NOT NULL CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    name        text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (team_id, slug)
);

CREATE TABLE users (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    email          text NOT NULL CHECK (email LIKE '%_@_%'),
    name           text NOT NULL DEFAULT '',
    password_hash  text,
    disabled       boolean NOT NULL DEFAULT false,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX users_email_idx ON users (lower(email));

CREATE TABLE groups (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    slug        text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    name        text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE group_memberships (
    group_id    uuid NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX group_memberships_user_idx ON group_memberships (user_id);

-- Rate limits ---------------------------------------------------------------

CREATE TABLE rate_limits (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    slug        text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    name        text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE rate_limit_rules (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    rate_limit_id   uuid NOT NULL REFERENCES rate_limits (id) ON DELETE CASCADE,
    meter           text NOT NULL CHECK (meter IN ('requests', 'input_tokens', 'output_tokens', 'total_tokens', 'concurrency')),
    amount          bigint NOT NULL CHECK (amount > 0),
    -- window_seconds is ignored for the concurrency meter (its lease TTL is a setting).
    window_seconds  integer NOT NULL DEFAULT 60 CHECK (window_seconds BETWEEN 1 AND 2678400),
    -- per_principal makes the rule a sub-limit for each relay key / user instead of one shared cap.
    per_principal   boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX rate_limit_rules_rate_limit_idx ON rate_limit_rules (rate_limit_id);

-- Catalog -------------------------------------------------------------------

CREATE TABLE hosts (
    id                     uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    slug                   text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
    name                   text NOT NULL DEFAULT '',
    provider               text NOT NULL CHECK (provider IN ('openai', 'anthropic', 'google', 'custom')),
    base_url               text NOT NULL CHECK (base_url ~ '^https?://'),
    enabled                boolean NOT NULL DEFAULT true,
    connect_timeout_ms     integer NOT NULL DEFAULT 5000 CHECK (connect_timeout_ms > 0),
    first_byte_timeout_ms  integer NOT NULL DEFAULT 60000 CHECK (first_byte_timeout_ms > 0),
    idle_timeout_ms        integer NOT NULL DEFAULT 60000 CHECK (idle_timeout_ms > 0),
    total_timeout_ms       integer NOT NULL DEFAULT 600000 CHECK (total_timeout_ms > 0),
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE models (
    id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- name is what callers put in a request's model field.
    name                 text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$'),
    provider             text NOT NULL DEFAULT '',
    kind                 text NOT NULL DEFAULT 'chat' CHECK (kind IN ('chat', 'embedding')),
    context_window       integer NOT NULL DEFAULT 0 CHECK (context_window >= 0),
    max_output_tokens    integer NOT NULL DEFAULT 4096 CHECK (max_output_tokens >= 0),
    supports_tools       boolean NOT NULL DEFAULT true,
    supports_vision      boolean NOT NULL DEFAULT false,
    supports_json        boolean NOT NULL DEFAULT true,
    supports_thinking    boolean NOT NULL DEFAULT false,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);

-- Prices are integer micro-units of currency (1e-6 USD) per million tokens.
CREATE TABLE bindings (
    id                       uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    model_id                 uuid NOT NULL REFERENCES models (id) ON DELETE CASCADE,
    host_id                  uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
    shape                    text NOT NULL CHECK (shape IN ('openai', 'openai_responses', 'anthropic', 'gemini')),
    upstream_model           text NOT NULL CHECK (upstream_model <> ''),
    position                 integer NOT NULL DEFAULT 0,
    enabled                  boolean NOT NULL DEFAULT true,
    input_price              bigint NOT NULL DEFAULT 0 CHECK (input_price >= 0),
    output_price             bigint NOT NULL DEFAULT 0 CHECK (output_price >= 0),
    cached_input_price       bigint NOT NULL DEFAULT 0 CHECK (cached_input_price >= 0),
    cache_write_price        bigint NOT NULL DEFAULT 0 CHECK (cache_write_price >= 0),
    reasoning_price          bigint CHECK (reasoning_price >= 0),
    -- price_tiers: [{"above_input_tokens": N, "input_price": …, "output_price": …, …}], ascending.
    price_tiers              jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(price_tiers) = 'array'),
    created_at               timestamptz NOT NULL DEFAULT now(),
    updated_at               timestamptz NOT NULL DEFAULT now(),
    UNIQUE (model_id, host_id)
);
CREATE INDEX bindings_host_idx ON bindings (host_id);

CREATE TABLE host_keys (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    host_id            uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
    slug               text NOT NULL CHECK (slug ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
    -- Exactly one of: an environment reference ("env:NAME") or AES-256-GCM
    -- ciphertext (nonce || sealed) under RELAY_MASTER_KEY.
    secret_ref         text CHECK (secret_ref ~ '^env:[A-Za-z_][A-Za-z0-9_]*$'),
    secret_ciphertext  bytea,
    -- secret_version changes whenever the secret does; breakers key on it.
    secret_version     integer NOT NULL DEFAULT 1 CHECK (secret_version > 0),
    tier_rate_limit_id uuid REFERENCES rate_limits (id) ON DELETE SET NULL,
    position           integer NOT NULL DEFAULT 0,
    enabled            boolean NOT NULL DEFAULT true,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (host_id, slug),
    CHECK (num_nonnulls(secret_ref, secret_ciphertext) = 1)
);

-- Policies ------------------------------------------------------------------

CREATE TABLE policies (
    id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    slug                 text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    name                 text NOT NULL DEFAULT '',
    -- all_models / all_host_keys grant everything; otherwise the join tables list grants.
    all_models           boolean NOT NULL DEFAULT false,
    all_host_keys        boolean NOT NULL DEFAULT false,
    key_strategy         text NOT NULL DEFAULT 'prioritized' CHECK (key_strategy IN ('prioritized', 'round_robin', 'least_recently_used')),
    rate_limit_id        uuid REFERENCES rate_limits (id) ON DELETE SET NULL,
    max_wait_ms          integer NOT NULL DEFAULT 0 CHECK (max_wait_ms >= 0),
    priority             integer NOT NULL DEFAULT 0,
    max_attempts         integer NOT NULL DEFAULT 3 CHECK (max_attempts BETWEEN 1 AND 10),
    limiter_failure_mode text NOT NULL DEFAULT 'open' CHECK (limiter_failure_mode IN ('open', 'closed')),
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE policy_models (
    policy_id   uuid NOT NULL REFERENCES policies (id) ON DELETE CASCADE,
    model_id    uuid NOT NULL REFERENCES models (id) ON DELETE CASCADE,
    PRIMARY KEY (policy_id, model_id)
);

CREATE TABLE policy_host_keys (
    policy_id    uuid NOT NULL REFERENCES policies (id) ON DELETE CASCADE,
    host_key_id  uuid NOT NULL REFERENCES host_keys (id) ON DELETE CASCADE,
    PRIMARY KEY (policy_id, host_key_id)
);

-- Per-model rate limits of a policy: a request for the model counts against
-- this rate limit instead of the policy's own (one entry per model).
CREATE TABLE policy_model_rate_limits (
    policy_id      uuid NOT NULL REFERENCES policies (id) ON DELETE CASCADE,
    model_id       uuid NOT NULL REFERENCES models (id) ON DELETE CASCADE,
    rate_limit_id  uuid NOT NULL REFERENCES rate_limits (id) ON DELETE CASCADE,
    position       integer NOT NULL DEFAULT 0,
    PRIMARY KEY (policy_id, model_id)
);

CREATE TABLE service_accounts (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    slug        text NOT NULL CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    name        text NOT NULL DEFAULT '',
    -- RESTRICT: dropping a policy must not silently move callers to another one.
    policy_id   uuid REFERENCES policies (id) ON DELETE RESTRICT,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project_id, slug),
    UNIQUE (project_id, id)
);

CREATE TABLE policy_bindings (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    project_id          uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    policy_id           uuid NOT NULL REFERENCES policies (id) ON DELETE CASCADE,
    service_account_id  uuid,
    user_id             uuid REFERENCES users (id) ON DELETE CASCADE,
    group_id            uuid REFERENCES groups (id) ON DELETE CASCADE,
    position            integer NOT NULL DEFAULT 0,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    -- The service account must live in the binding's project.
    FOREIGN KEY (project_id, service_account_id) REFERENCES service_accounts (project_id, id) ON DELETE CASCADE,
    CHECK (num_nonnulls(service_account_id, user_id, group_id) = 1)
);
CREATE INDEX policy_bindings_project_idx ON policy_bindings (project_id, position);

-- Credentials ---------------------------------------------------------------

CREATE TABLE relay_keys (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    key_hash            bytea NOT NULL UNIQUE CHECK (length(key_hash) = 32),
    display_prefix      text NOT NULL,
    name                text NOT NULL DEFAULT '',
    project_id          uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    service_account_id  uuid,
    user_id             uuid REFERENCES users (id) ON DELETE CASCADE,
    policy_id           uuid REFERENCES policies (id) ON DELETE RESTRICT,
    priority            integer,
    expires_at          timestamptz,
    revoked_at          timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    -- The service account must live in the key's project.
    FOREIGN KEY (project_id, service_account_id) REFERENCES service_accounts (project_id, id) ON DELETE CASCADE,
    CHECK (num_nonnulls(service_account_id, user_id) = 1)
);
CREATE INDEX relay_keys_project_idx ON relay_keys (project_id);

CREATE TABLE inference_tokens (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    token_hash   bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    project_id   uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    expires_at   timestamptz NOT NULL,
    revoked_at   timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX inference_tokens_expires_idx ON inference_tokens (expires_at);

-- Budgets: spend caps (micro-units of currency) on a project, team or relay key.
CREATE TABLE budgets (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    team_id       uuid REFERENCES teams (id) ON DELETE CASCADE,
    project_id    uuid REFERENCES projects (id) ON DELETE CASCADE,
    relay_key_id  uuid REFERENCES relay_keys (id) ON DELETE CASCADE,
    period        text NOT NULL CHECK (period IN ('day', 'month')),
    amount        bigint NOT NULL CHECK (amount > 0),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CHECK (num_nonnulls(team_id, project_id, relay_key_id) = 1)
);

-- Access control ------------------------------------------------------------

CREATE TABLE role_bindings (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    role        text NOT NULL CHECK (role IN ('admin', 'team_admin', 'project_admin', 'developer', 'viewer')),
    user_id     uuid REFERENCES users (id) ON DELETE CASCADE,
    group_id    uuid REFERENCES groups (id) ON DELETE CASCADE,
    -- Scope: system when both are null, else the team or the project.
    team_id     uuid REFERENCES teams (id) ON DELETE CASCADE,
    project_id  uuid REFERENCES projects (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CHECK (num_nonnulls(user_id, group_id) = 1),
    CHECK (num_nonnulls(team_id, project_id) <= 1)
);
CREATE UNIQUE INDEX role_bindings_unique_idx ON role_bindings (
    role,
    coalesce(user_id, '00000000-0000-0000-0000-000000000000'),
    coalesce(group_id, '00000000-0000-0000-0000-000000000000'),
    coalesce(team_id, '00000000-0000-0000-0000-000000000000'),
    coalesce(project_id, '00000000-0000-0000-0000-000000000000')
);

CREATE TABLE sessions (
    token_hash  bytea PRIMARY KEY CHECK (length(token_hash) = 32),
    user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    csrf_token  text NOT NULL,
    expires_at  timestamptz NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sessions_user_idx ON sessions (user_id);
CREATE INDEX sessions_expires_idx ON sessions (expires_at);

-- Ledger --------------------------------------------------------------------

-- One row per request, partitioned by month on created_at. Identifiers are
-- copied, not referenced, so deleting a catalog row never rewrites history.
CREATE TABLE usage_events (
    request_id          text NOT NULL,
    created_at          timestamptz NOT NULL,
    relay_key_id        uuid,
    service_account_id  uuid,
    user_id             uuid,
    project_id          uuid,
    team_id             uuid,
    policy_id           uuid,
    model               text NOT NULL DEFAULT '',
    binding_id          uuid,
    host_id             uuid,
    host_key_id         uuid,
    inbound_shape       text NOT NULL DEFAULT '',
    upstream_shape      text NOT NULL DEFAULT '',
    stream              boolean NOT NULL DEFAULT false,
    status              integer NOT NULL,
    error_kind          text NOT NULL DEFAULT '',
    attempts            integer NOT NULL DEFAULT 0,
    input_tokens        bigint NOT NULL DEFAULT 0,
    output_tokens       bigint NOT NULL DEFAULT 0,
    cached_read_tokens  bigint NOT NULL DEFAULT 0,
    cache_write_tokens  bigint NOT NULL DEFAULT 0,
    reasoning_tokens    bigint NOT NULL DEFAULT 0,
    -- cost in nano-units of currency (1e-9 USD).
    cost                bigint NOT NULL DEFAULT 0,
    ttfb_ms             integer NOT NULL DEFAULT 0,
    total_ms            integer NOT NULL DEFAULT 0,
    overhead_us         integer NOT NULL DEFAULT 0
) PARTITION BY RANGE (created_at);
CREATE TABLE usage_events_default PARTITION OF usage_events DEFAULT;
CREATE INDEX usage_events_created_idx ON usage_events (created_at);
CREATE INDEX usage_events_project_idx ON usage_events (project_id, created_at);

CREATE TABLE audit_log (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    actor       text NOT NULL,
    action      text NOT NULL CHECK (action IN ('create', 'update', 'delete', 'revoke', 'rotate', 'login', 'logout')),
    kind        text NOT NULL,
    object_id   text NOT NULL,
    before      jsonb,
    after       jsonb
);
CREATE INDEX audit_log_at_idx ON audit_log (at);
CREATE INDEX audit_log_object_idx ON audit_log (kind, object_id);

-- Triggers ------------------------------------------------------------------

-- +goose StatementBegin
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['teams', 'projects', 'users', 'groups', 'rate_limits',
        'hosts', 'models', 'bindings', 'host_keys', 'policies', 'service_accounts', 'policy_bindings',
        'relay_keys', 'inference_tokens', 'budgets', 'role_bindings']
    LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE ON %I FOR EACH ROW EXECUTE FUNCTION relay_set_updated_at()', t || '_updated_at', t);
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT OR UPDATE OR DELETE ON %I FOR EACH ROW EXECUTE FUNCTION relay_notify()', t || '_notify', t);
    END LOOP;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER rate_limit_rules_updated_at BEFORE UPDATE ON rate_limit_rules
    FOR EACH ROW EXECUTE FUNCTION relay_set_updated_at();
CREATE TRIGGER rate_limit_rules_notify AFTER INSERT OR UPDATE OR DELETE ON rate_limit_rules
    FOR EACH ROW EXECUTE FUNCTION relay_notify('rate_limit_id');
CREATE TRIGGER group_memberships_notify AFTER INSERT OR UPDATE OR DELETE ON group_memberships
    FOR EACH ROW EXECUTE FUNCTION relay_notify('group_id');
CREATE TRIGGER policy_models_notify AFTER INSERT OR UPDATE OR DELETE ON policy_models
    FOR EACH ROW EXECUTE FUNCTION relay_notify('policy_id');
CREATE TRIGGER policy_host_keys_notify AFTER INSERT OR UPDATE OR DELETE ON policy_host_keys
    FOR EACH ROW EXECUTE FUNCTION relay_notify('policy_id');
CREATE TRIGGER policy_model_rate_limits_notify AFTER INSERT OR UPDATE OR DELETE ON policy_model_rate_limits
    FOR EACH ROW EXECUTE FUNCTION relay_notify('policy_id');

-- +goose Down
DROP TABLE audit_log;
DROP TABLE usage_events;
DROP TABLE sessions;
DROP TABLE role_bindings;
DROP TABLE budgets;
DROP TABLE inference_tokens;
DROP TABLE relay_keys;
DROP TABLE policy_bindings;
DROP TABLE service_accounts;
DROP TABLE policy_model_rate_limits;
DROP TABLE policy_host_keys;
DROP TABLE policy_models;
DROP TABLE policies;
DROP TABLE host_keys;
DROP TABLE bindings;
DROP TABLE models;
DROP TABLE hosts;
DROP TABLE rate_limit_rules;
DROP TABLE rate_limits;
DROP TABLE group_memberships;
DROP TABLE groups;
DROP TABLE users;
DROP TABLE projects;
DROP TABLE teams;
DROP FUNCTION relay_notify();
DROP FUNCTION relay_set_updated_at();
