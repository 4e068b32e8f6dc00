package consumer

import (
	"errors"
	"sync"
	"time"

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

// lagMetrics exports the lag of the group members that share a registerer: each member
// keeps its figures in a lagSource on each fetch and acknowledgement, and the age of its
// oldest unacknowledged record is taken at the scrape, so that it grows while a member is
// stuck. Only members register it, so a daemon's readers leave the names to the daemon's
// own gauges.
type lagMetrics struct {
	records, seconds *prometheus.Desc

	mu      sync.Mutex
	sources map[[2]string]*lagSource // by stream, group
}

// lagSource is one member's lag: the records from its acknowledged position to the tail and
// the timestamp (ms) of the record at that position.
type lagSource struct {
	mu       sync.Mutex
	records  uint64
	oldestTS uint64
}

func (s *lagSource) set(records, oldestTS uint64) {
	s.mu.Lock()
	s.records, s.oldestTS = records, oldestTS
	s.mu.Unlock()
}

func newLagMetrics(reg prometheus.Registerer) (*lagMetrics, error) {
	labels := []string{"stream", "group"}
	m := &lagMetrics{
		records: prometheus.NewDesc("sluice_consumer_group_lag_records",
			"Readable records at or after the consumer group's acknowledged position.", labels, nil),
		seconds: prometheus.NewDesc("sluice_consumer_group_lag_seconds",
			"Age of the consumer group's oldest unacknowledged record (0 when caught up).", labels, nil),
		sources: map[[2]string]*lagSource{},
	}
	if reg == nil {
		return m, nil
	}
	got, err := register(reg, m)
	if err != nil {
		return m, err
	}
	if lm, ok := got.(*lagMetrics); ok {
		return lm, nil
	}
	return m, errors.New("consumer: the group lag metrics are registered by another collector")
}

// Describe implements prometheus.Collector.
func (m *lagMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.records
	ch <- m.seconds
}

// Collect implements prometheus.Collector.
func (m *lagMetrics) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, s := range m.sources {
		s.mu.Lock()
		recs, ts := s.records, s.oldestTS
		s.mu.Unlock()
		secs := 0.0
		if recs > 0 {
			secs = age(ts, now)
		}
		ch <- prometheus.MustNewConstMetric(m.records, prometheus.GaugeValue, float64(recs), k[0], k[1])
		ch <- prometheus.MustNewConstMetric(m.seconds, prometheus.GaugeValue, secs, k[0], k[1])
	}
}

// add makes src the source of the stream's and group's series (a later member of the group
// in this process takes them over).
func (m *lagMetrics) add(stream, group string, src *lagSource) {
	m.mu.Lock()
	m.sources[[2]string{stream, group}] = src
	m.mu.Unlock()
}

// remove drops the series if src is still their source.
func (m *lagMetrics) remove(stream, group string, src *lagSource) {
	m.mu.Lock()
	if k := [2]string{stream, group}; m.sources[k] == src {
		delete(m.sources, k)
	}
	m.mu.Unlock()
}
