-- +goose Up
-- The ledger writes less per event (issue 31, docs/usage.md "What an event
-- costs"):
--
--   * route_detail_z holds a routing decision kept in full, deflated with a
--     dictionary of the decision's own keys (internal/store's packDetail):
--     a third of the jsonb's bytes. New events write it and leave the jsonb
--     route_detail NULL; events written before keep theirs. Readers take
--     whichever is set. A nullable column is a catalog change: no rewrite.
ALTER TABLE usage_events ADD COLUMN route_detail_z bytea;

-- +goose Down
-- Decisions written since the Up are in route_detail_z alone: they go with it.
ALTER TABLE usage_events DROP COLUMN route_detail_z;
