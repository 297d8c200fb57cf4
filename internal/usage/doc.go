// Package usage owns the usage ledger from the moment a request ends: it
// prices each event.Record from its binding (event.go), journals it on disk
// and queues it without blocking the request (journal.go: a killed process
// loses nothing it answered; a full queue spills to the journal), writes
// batches to Postgres (Writer), marking those Postgres cannot take for
// replay from the journal once Postgres is back (spool.go), or publishes
// them to a JetStream stream that `relay usage-consume` loads into the
// ledger (jetstream.go), over several ledgers sharded by project (shard.go),
// keeps the ledger's daily partitions and retention (Maintainer), and
// answers the control API's summary, time-series and event queries from the
// rollups and the ledger (query.go).
//
// It never runs on the request path beyond Writer.Record, which does a
// snapshot lookup, integer arithmetic, one write(2) of the event's journal
// record into the page cache (no fsync) and a non-blocking channel send. It
// reaches Postgres only through the store, and never rewrites a stored event:
// a pricing change applies to requests recorded after it.
package usage
