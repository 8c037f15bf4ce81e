package stack

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/clusterdns"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/kubeproxy"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/netpol"
)

// startClusterDNS runs CoreDNS on the node network's gateway, port 53, with
// a read-only identity: the kubelet's clusterDNS, so `*.svc.cluster.local`
// resolves in the real node's Pods (and nothing outside the cluster does).
// The kube-dns Service (ClusterIP .10 of the Service CIDR) fronts it too,
// for what looks the cluster DNS up by name.
func (s *Stack) startClusterDNS(ctx context.Context) error {
	kubeconfig, err := s.Cluster.AddUser(clusterdns.User, nil, "coredns.kubeconfig")
	if err != nil {
		return err
	}
	if err := clusterdns.Grant(ctx, s.Cluster.Client); err != nil {
		return err
	}
	start := time.Now()
	dns, err := clusterdns.Start(ctx, clusterdns.Config{Binary: s.Options.Bin.CoreDNS, Dir: filepath.Join(s.Options.StateDir, "coredns"),
		LogDir: s.Options.StateDir, Kubeconfig: kubeconfig, Address: s.Network.Gateway})
	if err != nil {
		return fmt.Errorf("cluster DNS: %w", err)
	}
	s.DNS = dns
	s.closers = append(s.closers, func() { _ = dns.Stop() })
	if err := clusterdns.Publish(ctx, s.Cluster.Client, s.Network.ServiceIP(10), s.Network.Gateway); err != nil {
		return err
	}
	s.Log.Info("cluster DNS ready", "address", dns.Addr, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// startKubeProxy runs kube-proxy for the real node, as system:kube-proxy
// (which the API server's bootstrap policy binds to system:node-proxier).
// Its chains are machine-wide: when another stack on this machine runs
// kube-proxy, this one goes on without it (ClusterIP Services then do not
// route from its Pods; DNS still answers) and says so.
func (s *Stack) startKubeProxy(ctx context.Context) error {
	kubeconfig, err := s.Cluster.AddUser("system:kube-proxy", nil, "kube-proxy.kubeconfig")
	if err != nil {
		return err
	}
	// An installed chart needs its Services: wait for the other stack.
	var wait time.Duration
	if s.Options.Chart {
		wait = 15 * time.Minute
	}
	start := time.Now()
	kp, err := kubeproxy.Start(ctx, kubeproxy.Config{Binary: filepath.Join(s.Options.Bin.KubeAssets, "kube-proxy"),
		Dir: filepath.Join(s.Options.StateDir, "kube-proxy"), LogDir: s.Options.StateDir, Kubeconfig: kubeconfig,
		NodeName: NodeName, NodeIP: s.Network.Gateway, PodCIDR: s.Network.Subnet, ServiceCIDR: s.Network.ServiceCIDR, WaitForLock: wait})
	if errors.Is(err, kubeproxy.ErrBusy) && !s.Options.Chart {
		s.Log.Warn("kube-proxy not started: ClusterIP Services do not route from the real node's Pods", "error", err)
		return nil
	}
	if err != nil {
		return err
	}
	s.KubeProxy = kp
	s.closers = append(s.closers, func() {
		if err := kp.Stop(); err != nil {
			s.Log.Error("stop kube-proxy", "error", err)
		}
	})
	s.Log.Info("kube-proxy ready", "services", s.Network.ServiceCIDR.String(), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// startNetworkPolicies runs kube-router's firewall for the real node
// (Options.NetworkPolicies), as netpol.User. Its rules are machine-wide
// like kube-proxy's: in chart mode it waits for another stack's to stop.
func (s *Stack) startNetworkPolicies(ctx context.Context) error {
	if !s.Options.NetworkPolicies {
		return nil
	}
	kubeconfig, err := s.Cluster.AddUser(netpol.User, nil, "kube-router.kubeconfig")
	if err != nil {
		return err
	}
	if err := netpol.Grant(ctx, s.Cluster.Client); err != nil {
		return err
	}
	var wait time.Duration
	if s.Options.Chart {
		wait = 15 * time.Minute
	}
	start := time.Now()
	e, err := netpol.Start(ctx, netpol.Config{Binary: s.Options.Bin.KubeRouter, LogDir: s.Options.StateDir, Kubeconfig: kubeconfig,
		NodeName: NodeName, ServiceCIDR: s.Network.ServiceCIDR, WaitForLock: wait})
	if err != nil {
		return fmt.Errorf("NetworkPolicy enforcer: %w", err)
	}
	s.NetPol = e
	s.closers = append(s.closers, func() {
		if err := e.Stop(); err != nil {
			s.Log.Error("stop kube-router", "error", err)
		}
	})
	s.Log.Info("NetworkPolicies enforced (kube-router firewall)", "node", NodeName, "took", time.Since(start).Round(time.Millisecond))
	return nil
}
