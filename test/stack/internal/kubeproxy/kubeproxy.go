package kubeproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/hostlock"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/proc"
)

// Config describes the kube-proxy of one node.
type Config struct {
	Binary     string // kube-proxy
	Dir        string // its configuration file
	LogDir     string // kube-proxy.log
	Kubeconfig string // user system:kube-proxy (the API server's bootstrap binding gives it system:node-proxier)
	NodeName   string // hostnameOverride: the real node's Node
	// NodeIP is the node's address (the Pod network's gateway): kube-proxy's
	// bindAddress and the only address NodePorts open on.
	NodeIP net.IP
	// PodCIDR is the node's Pod subnet (clusterCIDR: traffic from elsewhere
	// to a Service is masqueraded); ServiceCIDR the API server's
	// --service-cluster-ip-range. Leftovers looks for both.
	PodCIDR, ServiceCIDR *net.IPNet
	Verbosity            int
	// WaitForLock: while another stack holds the machine's kube-proxy lock,
	// wait this long for it before Start returns ErrBusy (0: not at all).
	WaitForLock time.Duration
}

// KubeProxy is a running kube-proxy holding the machine's lock.
type KubeProxy struct {
	c    Config
	p    *proc.Process
	lock *hostlock.Lock
	// ownFirewall: the families (iptables, ip6tables) where the
	// KUBE-FIREWALL chain (the kubelet's, which kube-proxy copies into both)
	// is this kube-proxy's, so Stop removes it there.
	ownFirewall []string
	// HealthzURL answers 200 once kube-proxy has synced its rules.
	HealthzURL string
}

// config renders the KubeProxyConfiguration: iptables mode, everything it
// listens on or matches kept to the node's addresses, conntrack sysctls and
// its OOM score left as they are (this VM has no CAP_SYS_RESOURCE).
func config(c Config, healthzPort, metricsPort int) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: %q
hostnameOverride: %q
bindAddress: %q
healthzBindAddress: "127.0.0.1:%d"
metricsBindAddress: "127.0.0.1:%d"
clusterCIDR: %q
detectLocalMode: ClusterCIDR
nodePortAddresses: [%q]
oomScoreAdj: 0
iptables:
  localhostNodePorts: false
  masqueradeAll: false
  syncPeriod: 30s
  minSyncPeriod: 0s
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
  udpTimeout: 0s
  udpStreamTimeout: 0s
configSyncPeriod: 0s
`, c.Kubeconfig, c.NodeName, c.NodeIP.String(), healthzPort, metricsPort, c.PodCIDR.String(), c.NodeIP.String()+"/32")
}

// Start takes the machine's kube-proxy lock (ErrBusy when another stack
// holds it), sweeps what a killed kube-proxy left, runs kube-proxy and waits
// until it has written its rules. On error everything is undone.
func Start(ctx context.Context, c Config) (_ *KubeProxy, err error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("kube-proxy needs root (it writes the host's iptables rules)")
	}
	lock, err := hostlock.Take(ctx, lockFile, c.WaitForLock)
	if errors.Is(err, hostlock.ErrBusy) {
		return nil, fmt.Errorf("%w: %w", ErrBusy, err)
	}
	if err != nil {
		return nil, fmt.Errorf("kube-proxy lock: %w", err)
	}
	k := &KubeProxy{c: c, lock: lock}
	defer func() {
		if err != nil {
			_ = k.Stop()
		}
	}()
	had, err := FirewallChains()
	if err != nil {
		return nil, err
	}
	// The kubelet makes KUBE-FIREWALL for IPv4 only: in ip6tables it is
	// always kube-proxy's (a killed one's, as we hold the lock).
	k.ownFirewall = []string{"ip6tables"}
	if !had["iptables"] {
		k.ownFirewall = append(k.ownFirewall, "iptables")
	}
	// We hold the lock: any kube-proxy chain now is a killed stack's.
	if left, err := Leftovers(); err != nil {
		return nil, err
	} else if len(left) > 0 {
		if err := k.cleanup(); err != nil {
			return nil, fmt.Errorf("sweep a previous kube-proxy's rules: %w", err)
		}
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, err
	}
	healthz, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	metrics, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(c.Dir, "kube-proxy-config.yaml")
	if err := os.WriteFile(cfg, []byte(config(c, healthz, metrics)), 0o600); err != nil {
		return nil, err
	}
	p, err := proc.Start(proc.Spec{Name: "kube-proxy", LogDir: c.LogDir, Binary: c.Binary,
		Args: []string{"--config=" + cfg, "--v=" + strconv.Itoa(c.Verbosity)}})
	if err != nil {
		return nil, err
	}
	k.p = p
	k.HealthzURL = fmt.Sprintf("http://127.0.0.1:%d/healthz", healthz)
	ready := func(ctx context.Context) error {
		if err := proc.HTTPOK(k.HealthzURL)(ctx); err != nil {
			return err
		}
		if missing, err := chainMissing("iptables", "nat", "KUBE-SERVICES"); err != nil || missing {
			return errors.Join(errors.New("no KUBE-SERVICES chain in the nat table yet"), err)
		}
		return nil
	}
	if err := p.WaitReady(ctx, 60*time.Second, ready); err != nil {
		return nil, fmt.Errorf("kube-proxy: %w", err)
	}
	return k, nil
}

// Stop ends kube-proxy, removes its rules (kube-proxy --cleanup, and the
// KUBE-FIREWALL copy if this one created it), checks that none is left, and
// releases the lock.
func (k *KubeProxy) Stop() error {
	var errs []error
	if k.p != nil {
		errs = append(errs, k.p.Stop(10*time.Second))
		k.p = nil
	}
	if k.lock == nil {
		return errors.Join(errs...)
	}
	errs = append(errs, k.cleanup())
	if left, err := Leftovers(k.c.PodCIDR, k.c.ServiceCIDR); err != nil {
		errs = append(errs, err)
	} else if len(left) > 0 {
		errs = append(errs, fmt.Errorf("kube-proxy rules left after cleanup: %v", left))
	}
	k.lock.Release()
	k.lock = nil
	return errors.Join(errs...)
}

// cleanup runs kube-proxy --cleanup (every chain and jump it made, both
// address families) and removes KUBE-FIREWALL where this kube-proxy made it.
func (k *KubeProxy) cleanup() error {
	if err := run(k.c.Binary, "--cleanup", "--v=0"); err != nil {
		return err
	}
	var errs []error
	for _, family := range k.ownFirewall {
		errs = append(errs, removeFirewallChain(family))
	}
	return errors.Join(errs...)
}
