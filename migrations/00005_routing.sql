-- +goose Up
-- Routing (issue 15, docs/routing in docs/control-api.md): how a model orders
-- its bindings, which other models stand in for it, a binding's share under
-- the weighted strategy, and a policy's overrides; and in the ledger the
-- decision itself and the money prompt-cache reads saved.

-- Catalog -------------------------------------------------------------------

-- strategy orders a model's bindings. fallbacks are other models of the same
-- kind, in order, that serve a request when every binding of the model fails
-- before the first byte (or a budget refused it and the policy allows it).
-- An array rather than a join table: the list is part of the model, read and
-- written with it; the triggers below keep it to existing models of the same
-- kind, and a deleted model leaves every list it was in.
ALTER TABLE models
    ADD COLUMN strategy  text NOT NULL DEFAULT 'priority'
        CHECK (strategy IN ('priority', 'weighted', 'cost', 'latency', 'least_busy')),
    ADD COLUMN fallbacks uuid[] NOT NULL DEFAULT '{}'
        CONSTRAINT models_fallbacks_check CHECK (NOT (id = ANY (fallbacks)) AND array_position(fallbacks, NULL) IS NULL
            AND cardinality(fallbacks) <= 16);

-- relay_models_check_fallbacks refuses a fallback list that names a model
-- twice, a model that does not exist or one of another kind, and a change of
-- kind while another model lists this one as a fallback.
-- +goose StatementBegin
CREATE FUNCTION relay_models_check_fallbacks() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    IF cardinality(NEW.fallbacks) > 0 AND (TG_OP = 'INSERT' OR NEW.fallbacks IS DISTINCT FROM OLD.fallbacks
        OR NEW.kind IS DISTINCT FROM OLD.kind) THEN
        IF (SELECT count(DISTINCT f) FROM unnest(NEW.fallbacks) AS f) <> cardinality(NEW.fallbacks) THEN
            RAISE EXCEPTION 'a fallback is listed twice' USING ERRCODE = 'check_violation';
        END IF;
        SELECT count(*) INTO n FROM models WHERE id = ANY (NEW.fallbacks);
        IF n <> cardinality(NEW.fallbacks) THEN
            RAISE EXCEPTION 'a fallback is not a model' USING ERRCODE = 'foreign_key_violation',
                CONSTRAINT = 'models_fallbacks_fkey';
        END IF;
        IF EXISTS (SELECT 1 FROM models WHERE id = ANY (NEW.fallbacks) AND kind <> NEW.kind) THEN
            RAISE EXCEPTION 'a fallback is a model of another kind' USING ERRCODE = 'check_violation';
        END IF;
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.kind IS DISTINCT FROM OLD.kind
        AND EXISTS (SELECT 1 FROM models WHERE NEW.id = ANY (fallbacks) AND kind <> NEW.kind) THEN
        RAISE EXCEPTION 'another model lists this one as a fallback' USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER models_check_fallbacks BEFORE INSERT OR UPDATE ON models
    FOR EACH ROW EXECUTE FUNCTION relay_models_check_fallbacks();

-- relay_models_drop_fallback takes a deleted model out of every fallback list.
-- +goose StatementBegin
CREATE FUNCTION relay_models_drop_fallback() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE models SET fallbacks = array_remove(fallbacks, OLD.id) WHERE OLD.id = ANY (fallbacks);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER models_drop_fallback AFTER DELETE ON models
    FOR EACH ROW EXECUTE FUNCTION relay_models_drop_fallback();
CREATE INDEX models_fallbacks_idx ON models USING gin (fallbacks);

-- weight is the binding's share of a model's traffic under the weighted strategy.
ALTER TABLE bindings ADD COLUMN weight integer NOT NULL DEFAULT 1 CHECK (weight BETWEEN 1 AND 1000000);

-- route_strategy overrides the models' own ('' keeps them); affinity keeps a
-- session on one host key ('key'), also on one binding ('binding'), or not
-- ('off'); budget_fallback routes a request a budget refuses to the model's
-- fallbacks instead of refusing it.
ALTER TABLE policies
    ADD COLUMN route_strategy  text NOT NULL DEFAULT ''
        CHECK (route_strategy IN ('', 'priority', 'weighted', 'cost', 'latency', 'least_busy')),
    ADD COLUMN affinity        text NOT NULL DEFAULT 'key' CHECK (affinity IN ('key', 'binding', 'off')),
    ADD COLUMN budget_fallback boolean NOT NULL DEFAULT false;

-- Ledger --------------------------------------------------------------------

-- route is the X-Relay-Route value sent with the response; route_detail the
-- decision in full (candidates, scores, why each was skipped); saved what the
-- prompt-cache reads saved, in nano-units of currency: cache-read tokens ×
-- (input price − cached input price). Nullable route columns and a constant
-- default are catalog changes only: no table rewrite.
ALTER TABLE usage_events
    ADD COLUMN route        text,
    ADD COLUMN route_detail jsonb,
    ADD COLUMN saved        bigint NOT NULL DEFAULT 0;

-- The rollups carry saved, and the detailed ones go down to the binding and
-- the host key, so that the cache hit ratio and the money saved show per
-- binding and per key. Rows summed before keep the nil UUID there (no
-- binding, no key). The coarse rollups keep the nil UUID too.
ALTER TABLE usage_rollups
    ADD COLUMN binding_id  uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000000',
    ADD COLUMN host_key_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000000',
    ADD COLUMN saved       bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_rollups DROP CONSTRAINT usage_rollups_pkey;
ALTER TABLE usage_rollups ADD PRIMARY KEY
    (grain, detailed, bucket, project_id, team_id, relay_key_id, host_id, model, status, binding_id, host_key_id);

-- +goose Down
-- The rollups fold their binding and host key groups back into one row each.
CREATE TEMP TABLE usage_rollups_down ON COMMIT DROP AS
SELECT grain, detailed, bucket, project_id, team_id, relay_key_id, host_id, model, status,
    sum(requests)::bigint AS requests, sum(errors)::bigint AS errors, sum(input_tokens)::bigint AS input_tokens,
    sum(output_tokens)::bigint AS output_tokens, sum(cached_read_tokens)::bigint AS cached_read_tokens,
    sum(cache_write_tokens)::bigint AS cache_write_tokens, sum(reasoning_tokens)::bigint AS reasoning_tokens,
    sum(cost)::bigint AS cost
FROM usage_rollups GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9;
DELETE FROM usage_rollups;
ALTER TABLE usage_rollups DROP CONSTRAINT usage_rollups_pkey;
ALTER TABLE usage_rollups DROP COLUMN saved, DROP COLUMN host_key_id, DROP COLUMN binding_id;
ALTER TABLE usage_rollups ADD PRIMARY KEY (grain, detailed, bucket, project_id, team_id, relay_key_id, host_id, model, status);
INSERT INTO usage_rollups (grain, detailed, bucket, project_id, team_id, relay_key_id, host_id, model, status,
    requests, errors, input_tokens, output_tokens, cached_read_tokens, cache_write_tokens, reasoning_tokens, cost)
SELECT * FROM usage_rollups_down;
ALTER TABLE usage_events DROP COLUMN saved, DROP COLUMN route_detail, DROP COLUMN route;
ALTER TABLE policies DROP COLUMN budget_fallback, DROP COLUMN affinity, DROP COLUMN route_strategy;
ALTER TABLE bindings DROP COLUMN weight;
DROP INDEX models_fallbacks_idx;
DROP TRIGGER models_drop_fallback ON models;
DROP FUNCTION relay_models_drop_fallback();
DROP TRIGGER models_check_fallbacks ON models;
DROP FUNCTION relay_models_check_fallbacks();
ALTER TABLE models DROP COLUMN fallbacks, DROP COLUMN strategy;
