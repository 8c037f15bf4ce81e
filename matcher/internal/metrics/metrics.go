package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/crowsnest-dev/crowsnest/matcher/internal/vulndb"
)

// Fetch results, the values of crowsnest_vulndb_fetch_total's result label.
const (
	FetchUpdated = "updated" // a newer DB was downloaded and activated
	FetchCurrent = "current" // the upstream lists nothing newer
	FetchError   = "error"   // the fetch failed; the active DB stays
)

// Source gives the active DB (a *vulndb.Store).
type Source interface {
	Active() (vulndb.DB, bool)
}

// Metrics is the matcher's registry.
type Metrics struct {
	reg     *prometheus.Registry
	fetch   *prometheus.CounterVec
	served  *prometheus.CounterVec
	rematch rematchMetrics
}

// New registers the matcher's metrics, reading the active DB from src at
// every scrape. now is the clock (nil: time.Now).
func New(src Source, now func() time.Time) *Metrics {
	if now == nil {
		now = time.Now
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{
		reg: reg,
		fetch: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_vulndb_fetch_total",
			Help: "Checks of the upstream DB listing, by result: updated, current or error.",
		}, []string{"result"}),
		served: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_vulndb_served_total",
			Help: "Requests for the DB listing and archives answered from a DB (scan Jobs' Grype fetching its DB), by file: listing or archive.",
		}, []string{"file"}),
	}
	m.rematch = newRematchMetrics(reg)
	registerBuildInfo(reg)
	for _, r := range []string{FetchUpdated, FetchCurrent, FetchError} {
		m.fetch.WithLabelValues(r)
	}
	m.served.WithLabelValues("listing")
	m.served.WithLabelValues("archive")
	reg.MustRegister(m.fetch, m.served,
		activeGauge(src, "crowsnest_vulndb_built_timestamp_seconds",
			"Build time of the active vulnerability DB, Unix seconds; absent without a DB.",
			func(db vulndb.DB) float64 { return float64(db.Built.Unix()) }),
		activeGauge(src, "crowsnest_vulndb_age_seconds",
			"Time since the active vulnerability DB was built; absent without a DB.",
			func(db vulndb.DB) float64 { return now().Sub(db.Built).Seconds() }),
	)
	return m
}

// Fetched counts one fetch with its result.
func (m *Metrics) Fetched(result string) { m.fetch.WithLabelValues(result).Inc() }

// Served counts one listing or archive request (dbserve.Handler.Served).
func (m *Metrics) Served(file string) { m.served.WithLabelValues(file).Inc() }

// Handler serves the registry.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// activeGauge is a gauge computed from the active DB at scrape time, left
// out of the scrape while there is no DB (rather than reporting 0, which
// would read as a DB built in 1970).
type activeGaugeCollector struct {
	src   Source
	desc  *prometheus.Desc
	value func(vulndb.DB) float64
}

func activeGauge(src Source, name, help string, value func(vulndb.DB) float64) prometheus.Collector {
	return &activeGaugeCollector{src: src, desc: prometheus.NewDesc(name, help, nil, nil), value: value}
}

func (c *activeGaugeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *activeGaugeCollector) Collect(ch chan<- prometheus.Metric) {
	if db, ok := c.src.Active(); ok {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, c.value(db))
	}
}
