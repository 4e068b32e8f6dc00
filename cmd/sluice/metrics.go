package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/objectstore"
)

// storeMetrics adapts objectstore's operation events to Prometheus:
//
//	sluice_objectstore_operations_total{op, result}   result "ok" or an error class
//	sluice_objectstore_bytes_total{op}                body bytes moved by get and put
//	sluice_objectstore_operation_seconds{op}          latency (a get until its body is closed)
type storeMetrics struct {
	ops     *prometheus.CounterVec
	bytes   *prometheus.CounterVec
	latency *prometheus.HistogramVec
}

func newStoreMetrics(reg prometheus.Registerer) *storeMetrics {
	m := &storeMetrics{
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "sluice", Subsystem: "objectstore", Name: "operations_total",
			Help: "Object store operations, by operation and result (ok or an error class).",
		}, []string{"op", "result"}),
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
	reg.MustRegister(m.ops, m.bytes, m.latency)
	return m
}

// ObserveOp implements objectstore.Observer.
func (m *storeMetrics) ObserveOp(e objectstore.OpEvent) {
	op := string(e.Op)
	result := objectstore.ErrorClass(e.Err)
	if result == "" {
		result = "ok"
	}
	m.ops.WithLabelValues(op, result).Inc()
	if e.Bytes > 0 {
		m.bytes.WithLabelValues(op).Add(float64(e.Bytes))
	}
	m.latency.WithLabelValues(op).Observe(e.Duration.Seconds())
}
