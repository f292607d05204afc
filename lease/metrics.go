package lease

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the manager's Prometheus collectors, all labelled instance=<ID> so several managers can
// share one registry. A nil *metrics (no Registerer) records nothing.
type metrics struct {
	held          prometheus.Gauge
	acquisitions  *prometheus.CounterVec
	renewFailures prometheus.Counter
	releases      *prometheus.CounterVec
	handoff       prometheus.Histogram
	linkHealthy   prometheus.Gauge
	linkFailures  prometheus.Counter
	startRetries  prometheus.Counter
}

// newMetrics registers the collectors on reg:
//
//	tenure_lease_held                    gauge    leases currently held
//	tenure_lease_acquisitions_total      counter  acquire attempts by result (ok, held, guard, error)
//	tenure_lease_renewal_failures_total  counter  renewals not confirmed (error or timeout)
//	tenure_lease_releases_total          counter  holdings ended, by reason (see the Reason constants)
//	tenure_lease_handoff_seconds         histogram time from a release notification to taking the lease
//	tenure_lease_link_healthy            gauge    1 while the link to Redis is healthy, 0 while not
//	tenure_lease_link_unhealthy_total    counter  transitions of the link to unhealthy
//	tenure_lease_start_retries_total     counter  failed start attempts that Start retried
func newMetrics(reg prometheus.Registerer, instance string) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	cl := prometheus.Labels{"instance": instance}
	m := &metrics{
		held: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tenure_lease_held", ConstLabels: cl,
			Help: "Leases currently held by this instance."}),
		acquisitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tenure_lease_acquisitions_total", ConstLabels: cl,
			Help: "Lease acquire attempts by result: ok, held (by another), guard (fresh dataset), error."}, []string{"result"}),
		renewFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "tenure_lease_renewal_failures_total", ConstLabels: cl,
			Help: "Lease renewals that failed or timed out (polling stops: fail closed)."}),
		releases: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tenure_lease_releases_total", ConstLabels: cl,
			Help: "Holdings ended, by reason: handoff, target-removed, stopped, lost, renew-failed, expired."}, []string{"reason"}),
		handoff: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tenure_lease_handoff_seconds", ConstLabels: cl,
			Help:    "Time from receiving a release notification to acquiring the released lease.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		linkHealthy: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tenure_lease_link_healthy", ConstLabels: cl,
			Help: "1 while the link to Redis is healthy; 0 while a call went unanswered and no probe has been answered since (no writes)."}),
		linkFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "tenure_lease_link_unhealthy_total", ConstLabels: cl,
			Help: "Transitions of the link to Redis to unhealthy (a call timed out or hit a network error)."}),
		startRetries: prometheus.NewCounter(prometheus.CounterOpts{Name: "tenure_lease_start_retries_total", ConstLabels: cl,
			Help: "Start attempts that failed (Redis unavailable) and were retried after a backoff."}),
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.held, m.acquisitions, m.renewFailures, m.releases, m.handoff, m.linkHealthy, m.linkFailures, m.startRetries} {
		errs = append(errs, reg.Register(c))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *metrics) acquired() {
	if m != nil {
		m.acquisitions.WithLabelValues("ok").Inc()
	}
}

func (m *metrics) acquireFailed(result string) {
	if m != nil {
		m.acquisitions.WithLabelValues(result).Inc()
	}
}

func (m *metrics) renewFailed() {
	if m != nil {
		m.renewFailures.Inc()
	}
}

func (m *metrics) released(reason string) {
	if m != nil {
		m.releases.WithLabelValues(reason).Inc()
	}
}

func (m *metrics) setHeld(n int) {
	if m != nil {
		m.held.Set(float64(n))
	}
}

func (m *metrics) handoffSeconds(s float64) {
	if m != nil {
		m.handoff.Observe(s)
	}
}

func (m *metrics) setLinkHealthy(ok bool) {
	if m == nil {
		return
	}
	if ok {
		m.linkHealthy.Set(1)
		return
	}
	m.linkHealthy.Set(0)
	m.linkFailures.Inc()
}

func (m *metrics) startRetry() {
	if m != nil {
		m.startRetries.Inc()
	}
}
