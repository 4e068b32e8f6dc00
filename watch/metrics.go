package watch

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	polls       *prometheus.CounterVec // result: changed | not_modified | error
	publishes   *prometheus.CounterVec // kind: snapshot | tail; taken: yes | no
	wakes       *prometheus.CounterVec // source: poll | publish | subscriber | remote
	watchers    prometheus.Gauge
	subscribers prometheus.Gauge
	// Remote watches.
	remote          *prometheus.CounterVec // result: changed | unchanged | error
	remoteFallbacks prometheus.Counter     // a remote watch stopped answering: back to polling
	served          prometheus.Counter     // watch requests served (Handler)
	held            prometheus.Counter     // watchers whose stream's role the process's committer took
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "sluice", Subsystem: "watch", Name: name, Help: help}
	}
	m := &metrics{
		polls: prometheus.NewCounterVec(prometheus.CounterOpts(opts("polls_total",
			"Manifest polls by the watchers (one per stream, shared by its followers), by result (changed, not_modified, error).")), []string{"result"}),
		publishes: prometheus.NewCounterVec(prometheus.CounterOpts(opts("publishes_total",
			"Commits published in-process for followed streams, by kind (snapshot, tail, window) and whether they moved the watcher (taken: yes, no).")), []string{"kind", "taken"}),
		wakes: prometheus.NewCounterVec(prometheus.CounterOpts(opts("wakes_total",
			"Newer manifests handed to a stream's followers, by source (poll, publish, subscriber, remote).")), []string{"source"}),
		watchers:    prometheus.NewGauge(prometheus.GaugeOpts(opts("watchers", "Streams watched (one watcher each)."))),
		subscribers: prometheus.NewGauge(prometheus.GaugeOpts(opts("subscribers", "Followers subscribed to the watchers."))),
		remote: prometheus.NewCounterVec(prometheus.CounterOpts(opts("remote_answers_total",
			"Answers of remote watches (a committer's watch endpoint), by result (changed, unchanged, error).")), []string{"result"}),
		remoteFallbacks: prometheus.NewCounter(prometheus.CounterOpts(opts("remote_fallbacks_total",
			"Remote watches that stopped answering, after which the watcher polls the store on its usual intervals."))),
		served: prometheus.NewCounter(prometheus.CounterOpts(opts("served_total",
			"Watch requests served to followers in other processes (Handler)."))),
		held: prometheus.NewCounter(prometheus.CounterOpts(opts("held_total",
			"Watchers that started with their stream's role held by this process's committer (Config.Holder): they poll only every HeldInterval."))),
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	reuse := func(c prometheus.Collector) prometheus.Collector {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return are.ExistingCollector
			}
			errs = append(errs, err)
		}
		return c
	}
	m.polls = reuse(m.polls).(*prometheus.CounterVec)
	m.publishes = reuse(m.publishes).(*prometheus.CounterVec)
	m.wakes = reuse(m.wakes).(*prometheus.CounterVec)
	m.watchers = reuse(m.watchers).(prometheus.Gauge)
	m.subscribers = reuse(m.subscribers).(prometheus.Gauge)
	m.remote = reuse(m.remote).(*prometheus.CounterVec)
	m.remoteFallbacks = reuse(m.remoteFallbacks).(prometheus.Counter)
	m.served = reuse(m.served).(prometheus.Counter)
	m.held = reuse(m.held).(prometheus.Counter)
	return m, errors.Join(errs...)
}
