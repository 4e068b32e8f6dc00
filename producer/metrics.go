package producer

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	appends       *prometheus.CounterVec // result: ok | rejected | failed
	records       prometheus.Counter
	bytes         prometheus.Counter
	batches       prometheus.Counter
	uploadBytes   prometheus.Counter
	uploadErrors  prometheus.Counter
	reuploads     prometheus.Counter
	commits       prometheus.Counter
	commitBatches prometheus.Histogram
	commitErrors  *prometheus.CounterVec // kind: conflict | outcome_unknown | throttled | other
	forwarded     *prometheus.CounterVec // result: ok | failed
	ackLatency    prometheus.Histogram
	writeLatency  prometheus.Histogram

	// appends' children, resolved once.
	appendsOK, appendsRejected, appendsFailed prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, producerID string) (*metrics, error) {
	labels := prometheus.Labels{"producer_id": producerID}
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "sluice", Subsystem: "producer", Name: name,
			Help: help, ConstLabels: labels})
	}
	m := &metrics{
		appends: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "sluice", Subsystem: "producer", Name: "appends_total",
			Help: "Appends resolved, by result (ok, rejected by a condition, failed).", ConstLabels: labels}, []string{"result"}),
		records:      c("records_total", "Records acknowledged."),
		bytes:        c("metered_bytes_total", "Metered bytes acknowledged."),
		batches:      c("batches_uploaded_total", "Batch objects uploaded (re-uploads included)."),
		uploadBytes:  c("upload_bytes_total", "Bytes of batch objects uploaded."),
		uploadErrors: c("upload_errors_total", "Failed batch uploads (retried)."),
		reuploads:    c("reuploads_total", "Batches uploaded again because they passed the commit deadline."),
		commits:      c("commits_total", "Successful manifest writes."),
		commitBatches: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "sluice", Subsystem: "producer", Name: "commit_batches",
			Help: "Batches per successful manifest write (group commit).", ConstLabels: labels, Buckets: prometheus.ExponentialBuckets(1, 2, 10)}),
		commitErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "sluice", Subsystem: "producer", Name: "commit_errors_total",
			Help: "Failed manifest writes, by kind (conflict, outcome_unknown, throttled, other).", ConstLabels: labels}, []string{"kind"}),
		forwarded: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "sluice", Subsystem: "producer", Name: "committer_requests_total",
			Help: "Commits sent to the stream's committer, by result (ok, failed: then committed directly).", ConstLabels: labels}, []string{"result"}),
		ackLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "sluice", Subsystem: "producer", Name: "ack_latency_seconds",
			Help: "Time from Append to its acknowledgement.", ConstLabels: labels, Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		writeLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "sluice", Subsystem: "producer", Name: "manifest_write_seconds",
			Help: "Duration of manifest write attempts.", ConstLabels: labels, Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
	}
	m.appendsOK = m.appends.WithLabelValues("ok")
	m.appendsRejected = m.appends.WithLabelValues("rejected")
	m.appendsFailed = m.appends.WithLabelValues("failed")
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, col := range m.all() {
		if err := reg.Register(col); err != nil {
			errs = append(errs, err)
		}
	}
	return m, errors.Join(errs...)
}

// all lists the collectors to register and unregister.
func (m *metrics) all() []prometheus.Collector {
	return []prometheus.Collector{m.appends, m.records, m.bytes, m.batches, m.uploadBytes, m.uploadErrors, m.reuploads,
		m.commits, m.commitBatches, m.commitErrors, m.forwarded, m.ackLatency, m.writeLatency}
}

func (m *metrics) unregister(reg prometheus.Registerer) {
	if reg == nil {
		return
	}
	for _, c := range m.all() {
		reg.Unregister(c)
	}
}
