// Package watch shares the watching of stream manifests between the followers of one
// process: one watcher per (store, manifest key), however many readers follow the stream.
//
// A Hub keeps the watchers. A follower subscribes to a stream (Hub.Subscribe) and asks its
// Subscription for a manifest newer than the one it holds (Wait blocks, Check does not). The
// stream's watcher reads the manifest with one conditional GET (If-None-Match on the version
// it holds, so an unchanged manifest costs a "not modified" answer and no body) per interval
// for all the subscribers, decodes a changed manifest once, and wakes every subscriber with
// the same decoded state, which they must not modify.
//
// # Intervals and staleness
//
// A watcher polls MinInterval after it starts or after a poll that found a change, and
// doubles the interval after every poll that found none, up to MaxInterval. So a follower of
// an idle stream sees a change made by another process at most MaxInterval plus one GET's
// latency after the store shows it (1 s plus the GET by default), and an idle stream costs
// one conditional GET per MaxInterval in each process that follows it, not one per
// follower per poll. A subscriber that holds a manifest the watcher has not seen (another
// generation, or a watcher that holds a failure) makes it poll at once. A subscriber that
// holds a newer manifest of the same generation hands it to the watcher instead.
//
// # Publishing
//
// A process that commits to a stream tells the hub, so that its followers need not wait for
// the next poll. Publish hands over the manifest as written (state and version): the
// followers are woken with it and no store request is made. PublishTail only says that the
// tail has reached a seq_num: if the watcher holds an older tail it polls at once (one
// conditional GET for all followers). Neither resets the interval: a stream whose commits
// are published needs no fast polling. PublishingStore does it for every manifest written
// through it: give it to the process's committer and producers. Publishes for a stream
// nobody in the process follows
// cost nothing. Lost or late publishes cost latency (up to the staleness bound), never
// correctness: a published manifest is taken only when it is newer than the watcher's (same
// generation, higher write counter), and a follower only ever moves forward.
//
// # Remote watches
//
// A follower in another process than the stream's committer (another daemon, a library
// consumer, `sluice read --follow`) learns of commits from the committer instead of the store: with
// Config.Remote enabled, each watcher, once it holds a manifest, long-polls the watch
// endpoint (Handler, served by a daemon at Path with the committers' token) of the committer
// that manifest names (the live role's URL, else Remote.Committer.URL, else a lapsed role's
// holder, which still sees the stream's commits). The request names the generation, write
// counter and tail held; the daemon's hub answers as soon as it holds a later manifest, or,
// for a stream with a journal, a view whose tail passed it (sent with the journal folded in) (at once for
// the daemon's own commits, which are published to it; within its own poll interval for
// others'), with the manifest's bytes and store version, or "unchanged" after
// Config.ServeHold. The answer is decoded and taken exactly as a publish: only a later write
// counter of the same generation moves the followers; another generation makes the watcher
// poll the store. The daemon answers only with manifests it read from the store or wrote
// itself, never one a request claims, so a follower is handed only durably written
// manifests. While a watch answers, the watcher polls the store only every
// Remote.SafetyInterval (10 s; a watch answers once the daemon sent its headers, at once on
// taking it, so a connection cut silently leaves the follower at most that stale until the
// request times out): an idle stream costs the follower's process 0.1 GET a
// second, and the daemon its usual one a second for all its followers, local and remote. A
// watch that fails (committer gone, network cut, an error answer) makes the watcher poll at
// once and on its usual intervals, keeping its view (so nothing is lost or repeated: the
// followers hold their own positions), and the committer is watched again after
// Remote.RetryAfter.
//
// # Streams held here
//
// With Config.Holder (a daemon's journal committer), a watcher first asks the committer to
// hold its stream's role (one manifest write, unless another live committer holds it). While
// the role is held here every commit of the stream passes through the committer, which
// publishes it to the hub (PublishTail), so the watcher polls the store only every
// Config.HeldInterval (2 min), to recover a lost publish: 1,000 followed idle streams cost a
// daemon about 8 polls a second (a conditional manifest GET and a GET of the next journal
// window each), not 1,000. A stream whose role is held elsewhere is polled (or watched
// remotely) as above.
//
// # Ordering
//
// Within a generation, manifests are ordered by their write counter (every write increments
// it), so Wait returns a manifest newer than the one given, never an older one. A manifest of
// another generation (the stream was deleted and created again) or a read failure is
// returned only when it comes from a poll that started after the subscriber last changed
// generation, so a subscriber is never handed a stale view of a stream it already saw
// recreated.
//
// # Failures
//
// A missing manifest, or a tombstone (see package manifest), is returned as an error
// matching manifest.ErrNotExist; a corrupt one as manifest.ErrCorrupt; both at once. Other
// read failures are retried by the next polls (the interval resets to MinInterval and
// doubles) and returned, wrapped, only after Config.ErrorAttempts of them in a row. The
// watcher keeps polling either way: a stream created again is seen by new subscribers.
//
// # Goroutines, logs, metrics
//
// A watcher is one goroutine owned by the hub: it starts with a stream's first subscriber
// and stops when the last one closes its Subscription. Hub.Close stops them all and waits
// for them; Wait and Subscribe then return ErrClosed. Logs go to Config.Logger; metrics
// (sluice_watch_*: polls by result, publishes by kind, wakes by source, watchers and
// subscribers, remote answers by result, remote fallbacks, watch requests served) to
// Config.Registerer. With Config.Remote a watcher has a second goroutine, the remote watch,
// stopped with it. Store requests are made with the context's purpose set
// to objectstore.PurposePoll.
package watch
