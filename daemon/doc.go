// Package daemon is the sluice daemon, assembled: S2's HTTP API (package server) over an
// engine of the store's streams (package engine), a committer for other producers and
// daemons (package committer), retention and garbage collection (package gc), /health and
// /metrics, on one listening port. The engine's readers share one manifest watcher per
// stream (package watch), to which the committer and the producers hand every manifest they
// write, so that a commit made here wakes them with no store read. `sluice serve` is a thin command over it; a Go program
// runs the same daemon in process with New and Run.
//
//	d, err := daemon.New(ctx, cfg, daemon.WithLogger(log))
//	if err != nil { ... }
//	go d.Run(ctx)            // serves until ctx ends or Close
//	fmt.Println(d.Addr())    // the port picked for Listen "127.0.0.1:0"
//	defer d.Close(ctx)
//
// Configuration: a Config (start from DefaultConfig: `sluice serve`'s defaults) holds what the
// command's flags set; options set where the daemon reports to (WithLogger, WithMetrics).
// New reports every problem of both at once, each matching ErrInvalidConfig; a zero value
// either means what its field's comment says or is refused. The store is the caller's: the
// daemon never closes it.
//
// Lifecycle: New listens (so that Addr is known before serving; connections wait in the
// listener's backlog until Run) and starts the committer, the engine and the collector. Run
// serves until its ctx ends, Close is called, or serving fails, then shuts down. Close shuts
// down and waits until every goroutine the daemon started has returned, whether Run was
// called or not. The shutdown stops accepting connections, lets unary calls finish, ends
// live sessions with a retryable 503 after a short grace, drains the producers (every
// accepted append is committed or failed), stops the collector, and gives up the committer
// roles, within Config.ShutdownTimeout. A daemon runs once.
//
// Routes: /v1/... (and the same without /v1) S2's REST API; GET /health 200 "ok" while the
// store answers a list, 503 otherwise; GET /metrics the Prometheus metrics (HTTP API, object
// store, producers, readers, consumer group lag, committer, collector); committer.Path the
// commit requests of other producers and daemons, with Config.Committer; watch.Path the
// watches of followers in other processes (package watch: long-polls of the daemon's hub,
// told of every commit the daemon makes). With Config.AuthToken every API call, commit
// request and watch needs the bearer token; /health and
// /metrics stay open, and /health then names only the class of a store error.
package daemon
