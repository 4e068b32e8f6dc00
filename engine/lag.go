package engine

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/internal/journalview"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

// DefaultLagInterval is Config.LagInterval's default.
const DefaultLagInterval = 15 * time.Second

// lagMetrics are the daemon's gauges of the streams it serves: each consumer group's lag (as
// consumer.GroupLag computes it) and the manifest's size.
type lagMetrics struct {
	records      *prometheus.GaugeVec // basin, stream, group
	seconds      *prometheus.GaugeVec
	manifestSize *prometheus.GaugeVec // basin, stream
}

func newLagMetrics(reg prometheus.Registerer) *lagMetrics {
	groupLabels := []string{"basin", "stream", "group"}
	m := &lagMetrics{
		records: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "sluice", Subsystem: "consumer", Name: "group_lag_records",
			Help: "Readable records at or after the consumer group's checkpoint, for the streams this daemon serves."}, groupLabels),
		seconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "sluice", Subsystem: "consumer", Name: "group_lag_seconds",
			Help: "Age of the consumer group's oldest unacknowledged record (0 when caught up), for the streams this daemon serves."}, groupLabels),
		manifestSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "sluice", Name: "manifest_size_bytes",
			Help: "Size of the manifest object of each stream this daemon serves."}, []string{"basin", "stream"}),
	}
	reg.MustRegister(m.records, m.seconds, m.manifestSize)
	return m
}

// lagStream is what the lag loop keeps of one served stream between its passes.
type lagStream struct {
	version string
	st      *manifest.State // the view: the manifest at version, its journal folded in
	size    int
	idx     *manifest.Index
	groups  map[string]bool
	// ts caches record timestamps read from batch objects (seq_num -> ms): a checkpoint
	// that does not move costs no further read.
	ts map[uint64]uint64
}

// lagLoop refreshes the lag and manifest size gauges every LagInterval, until Close.
func (e *Engine) lagLoop() {
	defer e.janitor.Done()
	t := time.NewTicker(e.cfg.LagInterval)
	defer t.Stop()
	streams := map[streamKey]*lagStream{}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.LagInterval)
		e.refreshLag(ctx, streams)
		cancel()
		select {
		case <-e.quit:
			return
		case <-t.C:
		}
	}
}

// refreshLag updates the gauges of every stream served now (an open producer or reader),
// and removes those of streams no longer served. A manifest is read with a conditional GET,
// so an unchanged one costs no body.
func (e *Engine) refreshLag(ctx context.Context, streams map[streamKey]*lagStream) {
	e.mu.Lock()
	served := map[streamKey]bool{}
	for k := range e.producers {
		served[k] = true
	}
	for k := range e.readers {
		served[k] = true
	}
	e.mu.Unlock()
	for k := range streams {
		if !served[k] {
			e.dropLag(k)
			delete(streams, k)
		}
	}
	now := e.cfg.Now()
	for k := range served {
		ls := streams[k]
		if ls == nil {
			ls = &lagStream{groups: map[string]bool{}, ts: map[uint64]uint64{}}
			streams[k] = ls
		}
		if err := e.refreshStreamLag(ctx, k, ls, now); err != nil {
			if errors.Is(err, manifest.ErrNotExist) {
				e.dropLag(k)
				delete(streams, k)
				continue
			}
			e.cfg.Logger.Debug("lag metrics not refreshed", "basin", k.basin, "stream", k.name, "err", err)
		}
	}
}

func (e *Engine) refreshStreamLag(ctx context.Context, k streamKey, ls *lagStream, now time.Time) error {
	loc, err := stream.Locate(k.basin, k.name)
	if err != nil {
		return err
	}
	obj, err := e.cfg.Store.Get(ctx, loc.ManifestKey(), objectstore.GetOptions{IfNoneMatch: ls.version})
	switch {
	case errors.Is(err, objectstore.ErrNotModified) && ls.st != nil:
		// The manifest is unchanged, but its journal may hold new windows.
		st, err := journalview.Refold(ctx, e.cfg.Store, loc.ManifestKey(), ls.st)
		if err != nil {
			return err
		}
		if st != nil {
			ls.st, ls.idx = st, ls.idx.WithState(st)
		}
	case errors.Is(err, objectstore.ErrNotFound):
		return manifest.ErrNotExist
	case err != nil:
		return err
	default:
		var buf bytes.Buffer
		_, err := buf.ReadFrom(obj.Body)
		obj.Body.Close()
		if err != nil {
			return err
		}
		if buf.Len() == 0 {
			return manifest.ErrNotExist // a tombstone
		}
		st, err := manifest.Decode(loc.ManifestKey(), buf.Bytes())
		if err != nil {
			return err
		}
		if err := journalview.Fold(ctx, e.cfg.Store, loc.ManifestKey(), st); err != nil {
			return err
		}
		if ls.st != nil && st.Generation != ls.st.Generation {
			ls.ts, ls.idx = map[uint64]uint64{}, nil
		}
		if ls.idx == nil {
			ls.idx = manifest.NewIndex(e.cfg.Store, st)
		} else {
			ls.idx = ls.idx.WithState(st)
		}
		ls.version, ls.st, ls.size = obj.Version, st, buf.Len()
	}
	e.lag.manifestSize.WithLabelValues(k.basin, k.name).Set(float64(ls.size))
	used := map[uint64]bool{}
	ts := func(ctx context.Context, en *manifest.Entry, seq uint64) (uint64, error) {
		used[seq] = true
		if v, ok := ls.ts[seq]; ok {
			return v, nil
		}
		r, err := e.reader(k.basin, k.name)
		if err != nil {
			return 0, err
		}
		v, err := r.RecordTimestamp(ctx, en, seq)
		if err == nil {
			ls.ts[seq] = v
		}
		return v, err
	}
	for name, g := range ls.st.Groups {
		lag, err := consumer.GroupLag(ctx, ls.idx, g.Checkpoint, now, ts)
		if err != nil {
			return err
		}
		e.lag.records.WithLabelValues(k.basin, k.name, name).Set(float64(lag.Records))
		e.lag.seconds.WithLabelValues(k.basin, k.name, name).Set(lag.Seconds)
		ls.groups[name] = true
	}
	for name := range ls.groups {
		if _, ok := ls.st.Groups[name]; !ok {
			e.lag.records.DeleteLabelValues(k.basin, k.name, name)
			e.lag.seconds.DeleteLabelValues(k.basin, k.name, name)
			delete(ls.groups, name)
		}
	}
	for seq := range ls.ts {
		if !used[seq] {
			delete(ls.ts, seq)
		}
	}
	return nil
}

// dropLag removes the gauges of a stream no longer served.
func (e *Engine) dropLag(k streamKey) {
	l := prometheus.Labels{"basin": k.basin, "stream": k.name}
	e.lag.records.DeletePartialMatch(l)
	e.lag.seconds.DeletePartialMatch(l)
	e.lag.manifestSize.DeletePartialMatch(l)
}
