-- +goose Up
-- Guardrails per policy (issue 27, docs/guardrails.md): NULL is none;
-- otherwise an object {"rules": [{"name", "stage": "input" | "output" |
-- "both", "action": "block" | "redact" | "log", "detectors": [...],
-- "deny_words": [...], "deny_patterns": [...]}], "max_prompt_bytes": n}.
-- The control API validates it (guardrail.Settings); the loader compiles
-- it into the snapshot.
ALTER TABLE policies
    ADD COLUMN guardrails jsonb
        CONSTRAINT policies_guardrails_check CHECK (guardrails IS NULL OR jsonb_typeof(guardrails) = 'object');

-- +goose Down
ALTER TABLE policies DROP COLUMN guardrails;
