package election

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Prometheus collectors of one elector, labelled with its role. Collectors are shared
// between electors registered on the same registry.
type metrics struct {
	isLeader  prometheus.Gauge
	elections prometheus.Counter
	failovers prometheus.Counter
	tenure    prometheus.Observer
	// startRetries counts failed attempts to reach the backend during Start.
	startRetries prometheus.Counter
}

// newMetrics registers (or reuses) the collectors on reg. A nil reg gives unregistered collectors.
//
//	tenure_election_is_leader{role}        1 while this process leads role, else 0
//	tenure_election_elections_total{role}  leaderships won by this process
//	tenure_election_failovers_total{role}  leaderships won from a different previous leader
//	tenure_election_tenure_seconds{role}   histogram of leadership durations
//	tenure_election_start_retries_total{role}  backend calls that failed while Start waited for it
//
// For a backend that reports its link's health (the Redis backend), also:
//
//	tenure_election_link_healthy{role}          1 while the backend sends acquires and renewals, 0 while
//	                                            a call went unanswered and no probe has been answered since
//	tenure_election_link_unhealthy_total{role}  transitions of the backend's link to unhealthy
func newMetrics(reg prometheus.Registerer, role string, b Backend) (*metrics, error) {
	isLeader := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "tenure", Subsystem: "election", Name: "is_leader",
		Help: "1 while this process leads the role, else 0.",
	}, []string{"role"})
	elections := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "tenure", Subsystem: "election", Name: "elections_total",
		Help: "Leaderships won by this process.",
	}, []string{"role"})
	failovers := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "tenure", Subsystem: "election", Name: "failovers_total",
		Help: "Leaderships won by this process from a different previous leader.",
	}, []string{"role"})
	tenure := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "tenure", Subsystem: "election", Name: "tenure_seconds",
		Help:    "Durations of this process's leaderships.",
		Buckets: prometheus.ExponentialBuckets(0.1, 4, 10),
	}, []string{"role"})
	retries := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "tenure", Subsystem: "election", Name: "start_retries_total",
		Help: "Backend calls that failed while Start waited for the backend to answer.",
	}, []string{"role"})
	if reg != nil {
		var err error
		if retries, err = register(reg, retries); err != nil {
			return nil, err
		}
		if isLeader, err = register(reg, isLeader); err != nil {
			return nil, err
		}
		if elections, err = register(reg, elections); err != nil {
			return nil, err
		}
		if failovers, err = register(reg, failovers); err != nil {
			return nil, err
		}
		if tenure, err = register(reg, tenure); err != nil {
			return nil, err
		}
		if lr, ok := b.(linkReporter); ok {
			labels := prometheus.Labels{"role": role}
			healthy := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Namespace: "tenure", Subsystem: "election", Name: "link_healthy", ConstLabels: labels,
				Help: "1 while the backend sends acquires and renewals; 0 while a call went unanswered and no probe has been answered since.",
			}, func() float64 {
				if lr.LinkHealthy() {
					return 1
				}
				return 0
			})
			failures := prometheus.NewCounterFunc(prometheus.CounterOpts{
				Namespace: "tenure", Subsystem: "election", Name: "link_unhealthy_total", ConstLabels: labels,
				Help: "Transitions of the backend's link to unhealthy (a call timed out or hit a network error).",
			}, func() float64 { return float64(lr.LinkFailures()) })
			if _, err := register(reg, healthy); err != nil {
				return nil, err
			}
			if _, err := register(reg, failures); err != nil {
				return nil, err
			}
		}
	}
	return &metrics{
		isLeader:  isLeader.WithLabelValues(role),
		elections: elections.WithLabelValues(role),
		failovers: failovers.WithLabelValues(role),
		tenure:    tenure.WithLabelValues(role),

		startRetries: retries.WithLabelValues(role),
	}, nil
}

// linkReporter is implemented by backends that track their link's health (RedisBackend).
type linkReporter interface {
	LinkHealthy() bool
	LinkFailures() uint64
}

// register registers c, or returns the collector already registered under the same description.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}
