package gc

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	passes         prometheus.Counter
	passErrors     prometheus.Counter
	listed         prometheus.Counter
	listErrors     prometheus.Counter
	deleted        prometheus.Counter
	deleteErrors   prometheus.Counter
	entriesDropped prometheus.Counter
	streamsDeleted prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "sluice", Subsystem: "gc", Name: name, Help: help})
	}
	m := &metrics{
		passes:         c("passes_total", "Collector passes over a stream."),
		passErrors:     c("pass_errors_total", "Passes (or stream listings) that failed; retried next round."),
		listed:         c("objects_listed_total", "Objects listed under data and segment prefixes."),
		listErrors:     c("list_errors_total", "Failed listings."),
		deleted:        c("objects_deleted_total", "Unreferenced objects deleted."),
		deleteErrors:   c("delete_errors_total", "Failed deletes (retried next pass)."),
		entriesDropped: c("entries_dropped_total", "Manifest entries dropped by retention."),
		streamsDeleted: c("streams_deleted_total", "Streams deleted by delete_on_empty."),
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	reuse := func(col prometheus.Counter) prometheus.Counter {
		err := reg.Register(col)
		if err == nil {
			return col
		}
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if ex, ok := are.ExistingCollector.(prometheus.Counter); ok {
				return ex
			}
		}
		errs = append(errs, err)
		return col
	}
	m.passes = reuse(m.passes)
	m.passErrors = reuse(m.passErrors)
	m.listed = reuse(m.listed)
	m.listErrors = reuse(m.listErrors)
	m.deleted = reuse(m.deleted)
	m.deleteErrors = reuse(m.deleteErrors)
	m.entriesDropped = reuse(m.entriesDropped)
	m.streamsDeleted = reuse(m.streamsDeleted)
	return m, errors.Join(errs...)
}
