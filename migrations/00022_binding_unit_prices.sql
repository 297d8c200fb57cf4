-- +goose Up
-- unit_prices: what a binding bills per unit rather than per token (issue
-- 26): images generated, by size and quality, and seconds of audio. An
-- array of {"unit": "image"|"second", "size": …, "quality": …, "price": …},
-- price in micro-units of currency per unit; size and quality only for
-- images, either left out to match any. docs/usage.md "Unit prices".
ALTER TABLE bindings ADD COLUMN unit_prices jsonb NOT NULL DEFAULT '[]'
    CHECK (jsonb_typeof(unit_prices) = 'array');

-- +goose Down
ALTER TABLE bindings DROP COLUMN unit_prices;
