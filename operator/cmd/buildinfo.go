package main

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/crowsnest-dev/crowsnest/api/buildinfo"
)

// buildInfo is crowsnest_build_info, served with the manager's metrics.
var buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: buildinfo.Metric, Help: buildinfo.MetricHelp,
}, buildinfo.LabelNames())

func init() {
	buildInfo.With(buildinfo.Labels()).Set(1)
	metrics.Registry.MustRegister(buildInfo)
}
