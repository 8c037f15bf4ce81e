package stack

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/workload"
)

// PrintSummary tells the user what runs where.
func (s *Stack) PrintSummary(w io.Writer, took time.Duration) {
	var b strings.Builder
	fmt.Fprintf(&b, "\nCrowsnest local stack is up (%s).\n\n", took.Round(100*time.Millisecond))
	if s.API != nil {
		fmt.Fprintf(&b, "  Dashboard     %s/   (%d results-api replicas behind it)\n", s.URL(), len(s.APIs))
		fmt.Fprintf(&b, "  REST API      %s/api/v1/reports\n", s.URL())
		fmt.Fprintf(&b, "  NATS          %s   (nats sub 'crowsnest.>' -s %s --user reader --password $(cat %s))\n",
			s.NATS.URL(), s.NATS.URL(), s.NATS.PasswordFile(eventsv1.UserReader))
		fmt.Fprintf(&b, "  Postgres      %s\n", s.Postgres.URL)
		fmt.Fprintf(&b, "  Operator      metrics %s\n", s.Operator.MetricsURL())
		fmt.Fprintf(&b, "  Notifier      high and critical findings → %s  (what it sent, as JSON)\n", s.Notifications.Address())
		fmt.Fprintf(&b, "  Matcher       %s   (scan Pods fetch Grype's DB here; %s/metrics)\n", s.Matcher.VulnDBURL(), s.Matcher.URL())
		if s.Options.HoldBackAdvisories && s.Options.DBUpdateAfter > 0 {
			fmt.Fprintf(&b, "                in %s a newer DB publishes %s: watch %s/changes\n", s.Options.DBUpdateAfter, strings.Join(DemoAdvisories, " and "), s.URL())
		}
		fmt.Fprintf(&b, "  Admin token   %s   (PUT/DELETE in every auth mode)\n", filepath.Join(s.Options.StateDir, "write-token"))
		if s.Options.ReadAuth == "kubernetes" {
			kubectl := filepath.Join(s.Options.Root, "bin", "kubectl") + " --kubeconfig " + s.Cluster.Kubeconfig
			fmt.Fprintf(&b, "  Sign in       reads need a token (--read-auth=kubernetes); paste one into the dashboard:\n")
			fmt.Fprintf(&b, "                everything:  %s create token %s -n %s --audience %s\n", kubectl, AdminServiceAccount, MatcherNamespace, TokenAudience)
			fmt.Fprintf(&b, "                %s only: %s create token %s -n %s --audience %s\n", workload.Namespace, kubectl, ViewerServiceAccount, workload.Namespace, TokenAudience)
		}
	}
	fmt.Fprintf(&b, "  Registry      %s (plain HTTP)\n", s.Registry.Host)
	for _, img := range s.Registry.Images {
		note := ""
		if !img.Pushed {
			note = "  (not in the registry: its scan fails)"
		}
		fmt.Fprintf(&b, "                %s@%s%s\n", img.Ref(), img.Digest[:19], note)
	}
	fmt.Fprintf(&b, "  Kubernetes    export KUBECONFIG=%s\n", s.Cluster.Kubeconfig)
	fmt.Fprintf(&b, "                bin/kubectl get scanners,jobs,pods -A   (context %s)\n", KubeContext)
	if s.Options.Chart {
		fmt.Fprintf(&b, "  Tilt          source %s && make dev   (the Tiltfile's images, pushed to %s; the chart with %s)\n", s.DevEnvFile(), s.ImageRegistry(), s.devValuesFile())
	}
	if s.DNS != nil {
		services := "kube-proxy routes ClusterIPs in " + s.Network.ServiceCIDR.String()
		if s.KubeProxy == nil {
			services = "ClusterIPs do not route: another stack on this machine runs kube-proxy"
		}
		fmt.Fprintf(&b, "  Cluster DNS   %s (CoreDNS, *.svc.cluster.local for the real node's Pods); %s\n", s.DNS.Addr, services)
	}
	fmt.Fprintf(&b, "  Logs          %s/*.log\n", s.Options.StateDir)
	fmt.Fprintf(&b, "  Real node     %s (containerd + kubelet): scan Pods run there, e.g.\n", NodeName)
	fmt.Fprintf(&b, "                bin/kubectl logs -n demo -l app.kubernetes.io/name=crowsnest-scan -c grype\n")
	if s.Options.Chart {
		fmt.Fprintf(&b, "\nEvery Pod runs as containers on the real node (the chart's cluster: no kwok Nodes).\nPress Ctrl-C to stop and remove all state.\n")
	} else {
		fmt.Fprintf(&b, "\nScan-Job Pods run as containers on the real node; kwok runs every other Pod.\nPress Ctrl-C to stop and remove all state.\n")
	}
	_, _ = io.WriteString(w, b.String())
}
