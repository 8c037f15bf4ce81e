package scanner

// TEMPORARY instrumentation (issue 30 analysis): where reconciles come from.

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var debugEnqueues = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "crowsnest_operator_debug_enqueues_total", Help: "debug",
}, []string{"source"})

var debugEffects = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "crowsnest_operator_debug_reconcile_effects_total", Help: "debug",
}, []string{"effect"})

func init() { metrics.Registry.MustRegister(debugEnqueues, debugEffects) }

func countPred(source string, p predicate.Predicate) predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			ok := p.Create(e)
			if ok {
				debugEnqueues.WithLabelValues(source + "-create").Inc()
			}
			return ok
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			ok := p.Update(e)
			if ok {
				debugEnqueues.WithLabelValues(source + "-update").Inc()
			}
			return ok
		},
		DeleteFunc: func(e event.DeleteEvent) bool {
			ok := p.Delete(e)
			if ok {
				debugEnqueues.WithLabelValues(source + "-delete").Inc()
			}
			return ok
		},
		GenericFunc: func(e event.GenericEvent) bool {
			ok := p.Generic(e)
			if ok {
				debugEnqueues.WithLabelValues(source + "-generic").Inc()
			}
			return ok
		},
	}
}

var _ client.Object = nil
