package serve

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus metrics, on a registry of its own.
type metrics struct {
	handler  http.Handler
	sessions prometheus.Gauge
	expired  prometheus.Counter
	requests *prometheus.CounterVec // by method and outcome
	refused  *prometheus.CounterVec // HTTP requests refused, by reason
	upstream prometheus.Histogram
	observer latencyObserver
}

func newMetrics() *metrics {
	reg := prometheus.NewRegistry()
	m := &metrics{
		sessions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcp_tasks_proxy_sessions", Help: "Client sessions open."}),
		expired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcp_tasks_proxy_sessions_expired_total", Help: "Client sessions ended for idleness."}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcp_tasks_proxy_requests_total",
			Help: "Client requests answered, by method and outcome (result, error, cancelled, disconnected)."},
			[]string{"method", "outcome"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcp_tasks_proxy_http_refused_total",
			Help: "HTTP requests refused before reaching a session, by reason (forbidden, unauthorized, full, busy, timeout)."},
			[]string{"reason"}),
		upstream: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mcp_tasks_proxy_upstream_latency_seconds",
			Help:    "Time from an upstream HTTP request to its first answer (status or failure).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14)}),
	}
	reg.MustRegister(m.sessions, m.expired, m.requests, m.refused, m.upstream,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.observer = latencyObserver{m.upstream}
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return m
}

// latencyObserver feeds the upstream latency histogram from the routing
// client's exchanges.
type latencyObserver struct{ h prometheus.Histogram }

func (latencyObserver) Request(context.Context, string, string, http.Header, []byte) {}

// Answer observes an exchange's first answer: its status, or its failure.
func (o latencyObserver) Answer(_ context.Context, status int, _ []byte, since time.Time, err error) {
	if status != 0 || err != nil {
		o.h.Observe(time.Since(since).Seconds())
	}
}
