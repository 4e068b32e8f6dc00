package committer

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	writes, writeErrors, throttled, roleChanges, requests, checkpoints prometheus.Counter
	journalCheckpoints, journalSeals, journalResets                    prometheus.Counter
	batchesPerWrite, requestsPerWrite                                  prometheus.Histogram
	writeSeconds, requestSeconds                                       prometheus.Histogram
	streams                                                            prometheus.Gauge
	probes                                                             *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "sluice", Subsystem: "committer", Name: name, Help: help})
	}
	h := func(name, help string, b []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "sluice", Subsystem: "committer", Name: name, Help: help, Buckets: b})
	}
	m := &metrics{
		writes:             c("manifest_writes_total", "Manifest writes that committed requests."),
		writeErrors:        c("manifest_write_errors_total", "Failed manifest writes (conflicts and throttling not counted), retried."),
		throttled:          c("manifest_writes_throttled_total", "Manifest writes the store refused for its rate, retried after a backoff."),
		roleChanges:        c("role_changes_total", "Times this committer took a stream's role from another or from none."),
		requests:           c("requests_total", "Commit requests received."),
		checkpoints:        c("checkpoints_total", "Consumer group checkpoints written with commits."),
		journalCheckpoints: c("journal_checkpoints_total", "Manifest writes that brought a stream up to date with the journal (journal mode)."),
		journalSeals:       c("journal_seals_total", "Journals of other committers (or earlier incarnations) sealed and folded before taking a stream's role."),
		journalResets:      c("journal_resets_total", "Times a window write failed or was fenced and the committer started a new journal."),
		batchesPerWrite:    h("batches_per_write", "Batches committed per manifest write (group commit across writers).", prometheus.ExponentialBuckets(1, 2, 12)),
		requestsPerWrite:   h("requests_per_write", "Commit requests answered per manifest write.", prometheus.ExponentialBuckets(1, 2, 10)),
		writeSeconds:       h("manifest_write_seconds", "Duration of manifest write attempts.", prometheus.ExponentialBuckets(0.0005, 2, 16)),
		requestSeconds:     h("request_seconds", "Time from a commit request's arrival to its answer.", prometheus.ExponentialBuckets(0.0005, 2, 16)),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "sluice", Subsystem: "committer", Name: "streams",
			Help: "Streams with a commit loop (one that took a request within the idle timeout)."}),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "sluice", Subsystem: "committer", Name: "journal_probes_total",
			Help: "Probes of a lapsed role's holder before sealing its journal, by outcome: alive (not sealed), not_holder, unanswered."}, []string{"outcome"}),
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, col := range m.all() {
		if err := reg.Register(col); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		m.unregister(reg)
	}
	return m, errors.Join(errs...)
}

func (m *metrics) all() []prometheus.Collector {
	return []prometheus.Collector{m.writes, m.writeErrors, m.throttled, m.roleChanges, m.requests, m.checkpoints, m.journalCheckpoints, m.journalSeals, m.journalResets, m.batchesPerWrite, m.requestsPerWrite, m.writeSeconds, m.requestSeconds, m.streams, m.probes}
}

func (m *metrics) unregister(reg prometheus.Registerer) {
	if reg == nil {
		return
	}
	for _, c := range m.all() {
		reg.Unregister(c)
	}
}
