-- +goose Up
-- The response cache per policy (issue 27, docs/caching.md): NULL is off;
-- otherwise an object {"models": [model ids] (absent: every model granted),
-- "scope": "project" | "relay_key" | "header", "scope_header": name,
-- "ttl_seconds": n, "max_entry_bytes": n, "nondeterministic": bool}. The
-- control API validates it; the loader reads it into the snapshot.
ALTER TABLE policies
    ADD COLUMN response_cache jsonb
        CONSTRAINT policies_response_cache_check CHECK (response_cache IS NULL OR jsonb_typeof(response_cache) = 'object');

-- +goose Down
ALTER TABLE policies DROP COLUMN response_cache;
