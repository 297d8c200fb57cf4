// Package usage owns the usage ledger from the moment a request ends: it
// prices each event.Record from its binding (cost.go), queues it without
// blocking the request (Writer.Record drops and counts when the queue is
// full), writes batches to Postgres (Writer), spilling those Postgres cannot
// take to an on-disk spool that it replays once Postgres is back (spool.go),
// keeps the ledger's daily partitions and retention (Maintainer), and
// answers the control API's summary, time-series and event queries from the
// rollups and the ledger (query.go).
//
// It never runs on the request path beyond Writer.Record, which does a
// snapshot lookup, integer arithmetic and a non-blocking channel send. It
// reaches Postgres only through the store, and never rewrites a stored event:
// a pricing change applies to requests recorded after it.
package usage
