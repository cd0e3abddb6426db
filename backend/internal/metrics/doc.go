// Package metrics is what an Owner watches Lectern by: Prometheus collectors
// for HTTP requests, background jobs and the state Postgres keeps (queue
// depth, Site back-off, pacing backlog, Latest Chapter changes). The log
// context that puts a request ID, a Series key and its Site on every line is
// package observe.
//
// Nothing here needs a call inside the features it watches: HTTP requests
// are timed by a router middleware (route pattern, never the raw path, so
// the series stay few), jobs by a River worker middleware that reads the
// Series key from the job's arguments, and the rest is read from Postgres at
// scrape time. Workers may refine what the middleware records (SetOutcome,
// NoteRefusal); the pacing gate may report its waits (PacingWait).
//
// State read from Postgres is the same from every replica: sum it over
// replicas with max(), not sum().
package metrics
