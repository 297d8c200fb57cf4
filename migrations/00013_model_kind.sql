-- +goose Up
-- Model kinds beyond chat and embedding (issue 26, docs/inference-api.md):
-- what each model is for, so routing, grants and the console know it. The
-- images endpoints call image models, /v1/audio/* audio models,
-- /v1/moderations moderation models and /v1/rerank rerank models; a model
-- of another kind is refused (400 unsupported_feature).
ALTER TABLE models DROP CONSTRAINT models_kind_check;
ALTER TABLE models ADD CONSTRAINT models_kind_check
    CHECK (kind IN ('chat', 'embedding', 'image', 'audio', 'moderation', 'rerank'));

-- +goose Down
UPDATE models SET kind = 'chat' WHERE kind NOT IN ('chat', 'embedding');
ALTER TABLE models DROP CONSTRAINT models_kind_check;
ALTER TABLE models ADD CONSTRAINT models_kind_check CHECK (kind IN ('chat', 'embedding'));
