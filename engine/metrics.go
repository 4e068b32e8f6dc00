package engine

import (
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	openProducers prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		openProducers: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "sluice", Subsystem: "engine", Name: "open_producers",
			Help: "Streams with an open producer in this daemon.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.openProducers)
	}
	return m
}
