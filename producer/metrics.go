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
	commitErrors  *prometheus.CounterVec // kind: conflict | outcome_unknown | other
	ackLatency    prometheus.Histogram
	writeLatency  prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, producerID string) (*metrics, error) {
	labels := prometheus.Labels{"producer_id": producerID}
	m := &metrics{
		appends: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "sluice", Subsystem: "producer", Name: "appends_total",
			Help: "Appends resolved, by result (ok, rejected by a condition, failed).", ConstLabels: labels}, []string{"result"}),
		records: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "sluice", Subsystem: "producer", Name: "records_total",
			Help: "Records acknowledged.", ConstLabels: labels}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "sluice", Subsystem: "producer", Name: "metered_bytes_total",
			Help: "Metered bytes acknowledged.", ConstLabels: labels}),
		batches: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "sluice", Subsystem: "producer", Name: "batches_uploaded_total",
			Help: "Batch objects uploaded (re-uploads included).", ConstLabels: labels}),
		uploadBytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "sluice", Subsystem: "producer", Name: "upload_bytes_total",
			Help: "Bytes of batch objects uploaded.", ConstLabels: labels}),
		uploadErrors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "sluice", Subsystem: "producer", Name: "upload_errors_total",
			Help: "Failed batch uploads (retried).", ConstLabels: labels}),
		reuploads: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "sluice", Subsystem: "producer", Name: "reuploads_total",
			Help: "Batches uploaded again because they passed the commit deadline.", ConstLabels: labels}),
		commits: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "sluice", Subsystem: "producer", Name: "commits_total",
			Help: "Successful manifest writes.", ConstLabels: labels}),
		commitBatches: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "sluice", Subsystem: "producer", Name: "commit_batches",
			Help: "Batches per successful manifest write (group commit).", ConstLabels: labels, Buckets: prometheus.ExponentialBuckets(1, 2, 10)}),
		commitErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "sluice", Subsystem: "producer", Name: "commit_errors_total",
			Help: "Failed manifest writes, by kind (conflict, outcome_unknown, other).", ConstLabels: labels}, []string{"kind"}),
		ackLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "sluice", Subsystem: "producer", Name: "ack_latency_seconds",
			Help: "Time from Append to its acknowledgement.", ConstLabels: labels, Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		writeLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "sluice", Subsystem: "producer", Name: "manifest_write_seconds",
			Help: "Duration of manifest write attempts.", ConstLabels: labels, Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.appends, m.records, m.bytes, m.batches, m.uploadBytes, m.uploadErrors, m.reuploads,
		m.commits, m.commitBatches, m.commitErrors, m.ackLatency, m.writeLatency} {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	return m, errors.Join(errs...)
}

func (m *metrics) unregister(reg prometheus.Registerer) {
	if reg == nil {
		return
	}
	for _, c := range []prometheus.Collector{m.appends, m.records, m.bytes, m.batches, m.uploadBytes, m.uploadErrors, m.reuploads,
		m.commits, m.commitBatches, m.commitErrors, m.ackLatency, m.writeLatency} {
		reg.Unregister(c)
	}
}
