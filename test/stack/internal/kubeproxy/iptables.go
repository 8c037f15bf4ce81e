package kubeproxy

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/hostlock"
)

// ErrBusy: another stack on this machine runs kube-proxy now.
var ErrBusy = errors.New("another stack on this machine runs kube-proxy (its iptables chains are machine-wide, so one stack at a time routes Services)")

// lockFile is beside the node networks' locks (package node).
var lockFile = filepath.Join(hostlock.Dir, "kube-proxy")

// kubeletFirewallChain is the kubelet's chain, which kube-proxy also
// creates and never removes.
const kubeletFirewallChain = "KUBE-FIREWALL"

// proxyChains are the chains kube-proxy's iptables mode writes (v1.36:
// pkg/proxy/iptables), by name or by prefix.
var (
	proxyChains = map[string]bool{
		"KUBE-SERVICES": true, "KUBE-EXTERNAL-SERVICES": true, "KUBE-NODEPORTS": true, "KUBE-POSTROUTING": true,
		"KUBE-MARK-MASQ": true, "KUBE-FORWARD": true, "KUBE-PROXY-FIREWALL": true, "KUBE-PROXY-CANARY": true,
	}
	proxyChainPrefixes = []string{"KUBE-SVC-", "KUBE-SVL-", "KUBE-EXT-", "KUBE-FW-", "KUBE-SEP-", "KUBE-XLB-"}
)

func isProxyChain(name string) bool {
	if proxyChains[name] {
		return true
	}
	for _, p := range proxyChainPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// Leftovers lists what kube-proxy leaves in the host's rules, IPv4 and IPv6:
// each chain of kube-proxy's, each rule that jumps to one, and each rule
// that names an address in cidrs (the stack's Pod subnet and Service CIDR).
func Leftovers(cidrs ...*net.IPNet) ([]string, error) { return dumpLeftovers(true, cidrs) }

// Naming lists only the rules that name an address in cidrs: what one
// stack checks while another stack's kube-proxy runs (its chains are
// there, rightly).
func Naming(cidrs ...*net.IPNet) ([]string, error) { return dumpLeftovers(false, cidrs) }

// Held tells whether a stack on this machine runs kube-proxy now.
func Held() bool { return hostlock.Held(lockFile) }

func dumpLeftovers(chains bool, cidrs []*net.IPNet) ([]string, error) {
	var out []string
	for _, save := range []string{"iptables-save", "ip6tables-save"} {
		b, err := exec.Command(save).Output()
		if err != nil {
			if save == "ip6tables-save" && isNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("%s: %w", save, err)
		}
		out = append(out, leftoversIn(save, string(b), chains, cidrs)...)
	}
	return out, nil
}

// leftoversIn reads one iptables-save dump; chains: report kube-proxy's
// chains and the jumps to them too.
func leftoversIn(family, dump string, chains bool, cidrs []*net.IPNet) []string {
	var out []string
	table := ""
	sc := bufio.NewScanner(strings.NewReader(dump))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "*"):
			table = line[1:]
		case strings.HasPrefix(line, ":"):
			if name, _, _ := strings.Cut(line[1:], " "); chains && (isProxyChain(name) || ipv6Firewall(family, name)) {
				out = append(out, fmt.Sprintf("%s %s chain %s", family, table, name))
			}
		case strings.HasPrefix(line, "-A "):
			if ruleIsProxys(family, line, chains, cidrs) {
				out = append(out, fmt.Sprintf("%s %s rule %s", family, table, line))
			}
		}
	}
	return out
}

// ipv6Firewall: KUBE-FIREWALL in ip6tables is kube-proxy's alone (the
// kubelet makes it for IPv4 only).
func ipv6Firewall(family, chain string) bool {
	return family == "ip6tables-save" && chain == kubeletFirewallChain
}

func ruleIsProxys(family, rule string, chains bool, cidrs []*net.IPNet) bool {
	f := strings.Fields(rule)
	for i, w := range f {
		if chains && (w == "-j" || w == "-g") && i+1 < len(f) && (isProxyChain(f[i+1]) || ipv6Firewall(family, f[i+1])) {
			return true
		}
		if chains && i == 1 && (isProxyChain(w) || ipv6Firewall(family, w)) {
			return true
		}
		for _, c := range cidrs {
			if c != nil && mentions(w, c) {
				return true
			}
		}
	}
	return false
}

// mentions: w is an address or CIDR (optionally host:port) inside c.
func mentions(w string, c *net.IPNet) bool {
	w, _, _ = strings.Cut(w, "/")
	if h, _, err := net.SplitHostPort(w); err == nil {
		w = h
	}
	ip := net.ParseIP(w)
	return ip != nil && c.Contains(ip)
}

// families are the iptables commands of the address families kube-proxy
// programs.
var families = []string{"iptables", "ip6tables"}

// FirewallChains tells, per family (iptables, ip6tables), whether the
// filter table has the KUBE-FIREWALL chain: kube-proxy adds it to both and
// never removes it, the kubelet (IPv4) too, so tests compare before and
// after.
func FirewallChains() (map[string]bool, error) {
	out := map[string]bool{}
	for _, family := range families {
		missing, err := chainMissing(family, "filter", kubeletFirewallChain)
		if err != nil {
			return nil, err
		}
		out[family] = !missing
	}
	return out, nil
}

// chainMissing tells whether table has no chain called chain.
func chainMissing(family, table, chain string) (bool, error) {
	out, err := exec.Command(family, "-w", "-t", table, "-S", chain).CombinedOutput()
	if err == nil {
		return false, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return true, nil
	}
	return false, fmt.Errorf("%s -t %s -S %s: %w: %s", family, table, chain, err, strings.TrimSpace(string(out)))
}

// removeFirewallChain deletes KUBE-FIREWALL and the INPUT and OUTPUT jumps
// to it from family's filter table.
func removeFirewallChain(family string) error {
	for _, from := range []string{"INPUT", "OUTPUT"} {
		for range 10 {
			if exec.Command(family, "-w", "-t", "filter", "-D", from, "-j", kubeletFirewallChain).Run() != nil {
				break
			}
		}
	}
	if missing, err := chainMissing(family, "filter", kubeletFirewallChain); err != nil || missing {
		return err
	}
	if err := run(family, "-w", "-t", "filter", "-F", kubeletFirewallChain); err != nil {
		return err
	}
	return run(family, "-w", "-t", "filter", "-X", kubeletFirewallChain)
}

func isNotFound(err error) bool {
	var ee *exec.Error
	return errors.As(err, &ee)
}

// run runs a command and returns its output in the error.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
