package consumer

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	records      prometheus.Counter
	bytes        prometheus.Counter
	fetches      prometheus.Counter
	fetchBytes   prometheus.Counter
	fetchErrors  *prometheus.CounterVec // kind: missing | corrupt | other
	fetchLatency prometheus.Histogram
	polls        *prometheus.CounterVec // result: changed | not_modified | error
	ackWrites    prometheus.Counter
	ackErrors    prometheus.Counter
	fenced       prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "sluice", Subsystem: "consumer", Name: name, Help: help})
	}
	m := &metrics{
		records:    c("records_total", "Records delivered."),
		bytes:      c("metered_bytes_total", "Metered bytes delivered."),
		fetches:    c("object_fetches_total", "Batch objects fetched."),
		fetchBytes: c("object_fetch_bytes_total", "Bytes of batch objects fetched."),
		fetchErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "sluice", Subsystem: "consumer", Name: "object_fetch_errors_total",
			Help: "Failed batch object reads, by kind (missing, corrupt, other)."}, []string{"kind"}),
		fetchLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "sluice", Subsystem: "consumer", Name: "object_fetch_seconds",
			Help: "Duration of batch object reads.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		polls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "sluice", Subsystem: "consumer", Name: "manifest_polls_total",
			Help: "Manifest reads by followers, by result (changed, not_modified, error)."}, []string{"result"}),
		ackWrites: c("ack_writes_total", "Checkpoint writes of consumer groups."),
		ackErrors: c("ack_write_errors_total", "Failed checkpoint writes (retried)."),
		fenced:    c("fenced_total", "Group members fenced by a newer member."),
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	reuse := func(col prometheus.Collector) prometheus.Collector {
		err := reg.Register(col)
		if err == nil {
			return col
		}
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			return are.ExistingCollector
		}
		errs = append(errs, err)
		return col
	}
	m.records = reuse(m.records).(prometheus.Counter)
	m.bytes = reuse(m.bytes).(prometheus.Counter)
	m.fetches = reuse(m.fetches).(prometheus.Counter)
	m.fetchBytes = reuse(m.fetchBytes).(prometheus.Counter)
	m.fetchErrors = reuse(m.fetchErrors).(*prometheus.CounterVec)
	m.fetchLatency = reuse(m.fetchLatency).(prometheus.Histogram)
	m.polls = reuse(m.polls).(*prometheus.CounterVec)
	m.ackWrites = reuse(m.ackWrites).(prometheus.Counter)
	m.ackErrors = reuse(m.ackErrors).(prometheus.Counter)
	m.fenced = reuse(m.fenced).(prometheus.Counter)
	return m, errors.Join(errs...)
}
