// Package storemetrics reports the operations of an object store (objectstore.Instrument's
// events) as Prometheus metrics:
//
//	sluice_objectstore_operations_total{op, purpose, result}   result "ok" or an error class;
//	                                  purpose objectstore.PurposeOf (commit, poll, fetch, gc, other)
//	sluice_objectstore_bytes_total{op}                body bytes moved by get and put
//	sluice_objectstore_operation_seconds{op}          latency (a get until its body is closed)
//
// The daemon (package daemon) and the CLI's library-mode commands register them; one
// definition keeps the family the same wherever it is shown.
package storemetrics

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/objectstore"
)

// Metrics is an objectstore.Observer that counts into the families above.
type Metrics struct {
	ops     *prometheus.CounterVec
	bytes   *prometheus.CounterVec
	latency *prometheus.HistogramVec
}

// ErrNilRegisterer: New was given no registerer.
var ErrNilRegisterer = errors.New("storemetrics: registerer is nil")

// New registers the families on reg. It fails if reg is nil or already holds them.
func New(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, ErrNilRegisterer
	}
	m := &Metrics{
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "sluice", Subsystem: "objectstore", Name: "operations_total",
			Help: "Object store operations, by operation, purpose (commit, poll, fetch, gc, other) and result (ok or an error class).",
		}, []string{"op", "purpose", "result"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "sluice", Subsystem: "objectstore", Name: "bytes_total",
			Help: "Object body bytes moved, by operation (get, put).",
		}, []string{"op"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "sluice", Subsystem: "objectstore", Name: "operation_seconds",
			Help:    "Object store operation latency, by operation.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"op"}),
	}
	for _, c := range []prometheus.Collector{m.ops, m.bytes, m.latency} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("storemetrics: %w", err)
		}
	}
	return m, nil
}

// ObserveOp implements objectstore.Observer.
func (m *Metrics) ObserveOp(e objectstore.OpEvent) {
	op := string(e.Op)
	result := objectstore.ErrorClass(e.Err)
	if result == "" {
		result = "ok"
	}
	m.ops.WithLabelValues(op, string(e.Purpose), result).Inc()
	if e.Bytes > 0 {
		m.bytes.WithLabelValues(op).Add(float64(e.Bytes))
	}
	m.latency.WithLabelValues(op).Observe(e.Duration.Seconds())
}
