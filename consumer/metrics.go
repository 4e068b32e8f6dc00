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
		got, err := register(reg, col)
		if err != nil {
			errs = append(errs, err)
		}
		return got
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

// register registers col, or returns the equal collector registered before (so that several
// readers share one registerer).
func register(reg prometheus.Registerer, col prometheus.Collector) (prometheus.Collector, error) {
	err := reg.Register(col)
	if err == nil {
		return col, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		return are.ExistingCollector, nil
	}
	return col, err
}

// lagMetrics are a group member's lag gauges (see Consumer), labelled stream and group. Only
// members register them, so a daemon's readers leave the names to the daemon's own gauges.
type lagMetrics struct {
	records *prometheus.GaugeVec
	seconds *prometheus.GaugeVec
}

func newLagMetrics(reg prometheus.Registerer) (*lagMetrics, error) {
	labels := []string{"stream", "group"}
	m := &lagMetrics{
		records: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "sluice", Subsystem: "consumer", Name: "group_lag_records",
			Help: "Readable records at or after the consumer group's acknowledged position."}, labels),
		seconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "sluice", Subsystem: "consumer", Name: "group_lag_seconds",
			Help: "Age of the consumer group's oldest unacknowledged record (0 when caught up)."}, labels),
	}
	if reg == nil {
		return m, nil
	}
	rc, err1 := register(reg, m.records)
	sc, err2 := register(reg, m.seconds)
	m.records, m.seconds = rc.(*prometheus.GaugeVec), sc.(*prometheus.GaugeVec)
	return m, errors.Join(err1, err2)
}
