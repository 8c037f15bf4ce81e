package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/api/buildinfo"
)

// registerBuildInfo exports crowsnest_build_info{version,revision,goversion} = 1.
func registerBuildInfo(reg *prometheus.Registry) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: buildinfo.Metric, Help: buildinfo.MetricHelp}, buildinfo.LabelNames())
	g.With(buildinfo.Labels()).Set(1)
	reg.MustRegister(g)
}
