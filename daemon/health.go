package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
)

// healthHandler answers GET /health: 200 "ok" while a one-key list of the store succeeds
// within 5 s, 503 otherwise. The 503 names the store's error, or with a bearer token (the
// API closed to strangers, /health open to all) only its class, so that it never names the
// bucket, prefix or endpoint. A failure is logged at most once a minute, however often a
// prober asks.
func healthHandler(store objectstore.Store, log *slog.Logger, hideCause bool) http.HandlerFunc {
	var logged atomic.Int64 // when the last failed check was logged (Unix ns)
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if _, err := store.List(ctx, "", "", 1); err != nil {
			if now, last := time.Now().UnixNano(), logged.Load(); now-last >= int64(time.Minute) && logged.CompareAndSwap(last, now) {
				log.Warn("health check: store unavailable (logged at most once a minute)", slog.Any("err", err))
			}
			if hideCause {
				http.Error(w, "store unavailable ("+objectstore.ErrorClass(err)+"; the daemon's log has the error)", http.StatusServiceUnavailable)
				return
			}
			http.Error(w, "store unavailable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	}
}
