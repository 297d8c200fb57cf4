// Package objects owns the index of upstream objects: the files, batches,
// message batches and stored responses a caller made through Relay. Each
// entry names the project that made the object, the host and host key that
// hold it upstream (as the snapshot knows them, by ID) and its kind, time
// and size, so that a follow-up call (retrieve, content, cancel, delete)
// goes to that host key from any pod, and only the creating project ever
// sees it.
//
// Why an index rather than ids that carry their routing (an id sealed
// under Relay's keys): a list needs a per-project index anyway, since the
// upstream's own list on a shared host key holds every tenant's objects
// and must be filtered; and keeping the provider's id unchanged keeps
// what SDKs and tools expect of it (prefixes such as file-, batch_,
// msgbatch_, and ids quoted in the provider's own results, e.g. a batch's
// output_file_id). An index also lets an object be forgotten (deleted,
// expired) in one place.
//
// Lookups are keyed by (project, kind, id): another project's id is simply
// not there, so the caller gets exactly the ErrNotFound a missing id gets,
// and nothing about whether the id exists elsewhere.
//
// Two implementations behind Index, chosen as the rate limiter and the
// breakers are: Redis (one round trip per call, keys hash-tagged by project
// so a project's entries share a cluster slot) when RELAY_REDIS_URL is set,
// shared by every pod; Memory otherwise, correct for one pod and lost on
// restart. Retention is bounded both ways: an entry expires Retention after
// it was made (or last touched by Put), and a project keeps at most
// MaxPerKind entries of each kind, the oldest forgotten first.
//
// The pending list holds the batches and message batches whose usage is
// not yet in the ledger, each with the time it is next due a look: the
// proxy's sweep takes a bounded few that are due (leasing them, so that
// two pods do not look at once), without scanning every project.
//
// The package does no Postgres I/O and must not import the store: the
// proxy calls it on the request path.
package objects
