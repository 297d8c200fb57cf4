// Package usagetest holds checks on the usage ledger that tests in several
// packages share: whether the hourly rollups agree with the events they sum.
package usagetest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// rollupMismatchSQL counts the detailed hourly rollup groups whose requests,
// tokens, cost or kinds (batch requests and cost, tool calls and cost, by
// inbound shape) differ from the sum of their events in the ledger; a group
// on one side only counts too.
const rollupMismatchSQL = `WITH l AS (
	SELECT date_bin('1 hour', created_at, '2000-01-01 00:00:00+00') AS bucket, coalesce(project_id, '00000000-0000-0000-0000-000000000000') AS project_id,
		model, status, coalesce(relay_key_id, '00000000-0000-0000-0000-000000000000') AS relay_key_id,
		count(*) AS requests, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(cost) AS cost,
		count(*) FILTER (WHERE inbound_shape IN ('batch', 'message_batch')) AS batch_requests,
		coalesce(sum(cost) FILTER (WHERE inbound_shape IN ('batch', 'message_batch')), 0) AS batch_cost,
		count(*) FILTER (WHERE inbound_shape = 'mcp') AS tool_calls,
		coalesce(sum(cost) FILTER (WHERE inbound_shape = 'mcp'), 0) AS tool_cost
	FROM usage_events GROUP BY 1, 2, 3, 4, 5
), r AS (
	SELECT bucket, project_id, model, status, relay_key_id, sum(requests) AS requests, sum(input_tokens) AS input_tokens,
		sum(output_tokens) AS output_tokens, sum(cost) AS cost, sum(batch_requests) AS batch_requests, sum(batch_cost) AS batch_cost,
		sum(tool_calls) AS tool_calls, sum(tool_cost) AS tool_cost
	FROM usage_rollups WHERE grain = 'hour' AND detailed GROUP BY 1, 2, 3, 4, 5
)
SELECT count(*) FROM l FULL JOIN r USING (bucket, project_id, model, status, relay_key_id)
WHERE l.requests IS DISTINCT FROM r.requests OR l.input_tokens IS DISTINCT FROM r.input_tokens OR l.output_tokens IS DISTINCT FROM r.output_tokens
	OR l.cost IS DISTINCT FROM r.cost
	OR l.batch_requests IS DISTINCT FROM r.batch_requests OR l.batch_cost IS DISTINCT FROM r.batch_cost
	OR l.tool_calls IS DISTINCT FROM r.tool_calls OR l.tool_cost IS DISTINCT FROM r.tool_cost`

// RollupsMatchLedger fails t when any detailed hourly rollup row of the
// ledger at dbURL differs from the sum of its events, kinds included.
func RollupsMatchLedger(t testing.TB, dbURL string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var mismatched int
	if err := conn.QueryRow(t.Context(), rollupMismatchSQL).Scan(&mismatched); err != nil {
		t.Fatal(err)
	}
	if mismatched != 0 {
		t.Errorf("%d detailed hourly rollup groups disagree with the ledger", mismatched)
	}
}
