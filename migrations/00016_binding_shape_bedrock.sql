-- +goose Up
-- Bedrock's Converse API is a binding shape of its own (issue 25,
-- docs/translation.md): any Bedrock model serves every inbound shape.
ALTER TABLE bindings DROP CONSTRAINT bindings_shape_check;
ALTER TABLE bindings ADD CONSTRAINT bindings_shape_check
    CHECK (shape IN ('openai', 'openai_responses', 'anthropic', 'gemini', 'bedrock_converse'));

-- +goose Down
DELETE FROM bindings WHERE shape = 'bedrock_converse';
ALTER TABLE bindings DROP CONSTRAINT bindings_shape_check;
ALTER TABLE bindings ADD CONSTRAINT bindings_shape_check
    CHECK (shape IN ('openai', 'openai_responses', 'anthropic', 'gemini'));
