package netpol

import (
	"bufio"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
)

// What kube-router's firewall writes (v2.1: pkg/controllers/netpol): filter
// chains by prefix, ipsets by prefix (IPv6 ones with "inet6:" before it;
// the stack runs IPv4 only).
var (
	chainPrefixes = []string{"KUBE-ROUTER-", "KUBE-NWPLCY-", "KUBE-POD-FW-"}
	setPrefixes   = []string{"KUBE-SRC-", "KUBE-DST-", "inet6:KUBE-SRC-", "inet6:KUBE-DST-"}
	// builtinChains jump to KUBE-ROUTER-<name>.
	builtinChains = []string{"INPUT", "FORWARD", "OUTPUT"}
)

func hasPrefix(name string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(name, p) })
}

// Leftovers lists what kube-router's firewall left in the host's filter
// table and ipsets: each chain of its, each rule that jumps to one, each
// set.
func Leftovers() ([]string, error) {
	dump, err := output("iptables-save", "-t", "filter")
	if err != nil {
		return nil, err
	}
	chains, jumps := inDump(dump)
	sets, err := ownSets()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range chains {
		out = append(out, "iptables filter chain "+c)
	}
	for _, r := range jumps {
		out = append(out, "iptables filter rule "+r)
	}
	for _, s := range sets {
		out = append(out, "ipset "+s)
	}
	return out, nil
}

// inDump reads an iptables-save dump of the filter table: kube-router's
// chains, and the rules of the built-in chains that jump to them.
func inDump(dump string) (chains, jumps []string) {
	sc := bufio.NewScanner(strings.NewReader(dump))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, ":"):
			if name, _, _ := strings.Cut(line[1:], " "); hasPrefix(name, chainPrefixes) {
				chains = append(chains, name)
			}
		case strings.HasPrefix(line, "-A "):
			f := strings.Fields(line)
			if len(f) > 1 && slices.Contains(builtinChains, f[1]) && jumpsToOwn(f) {
				jumps = append(jumps, line)
			}
		}
	}
	return chains, jumps
}

func jumpsToOwn(fields []string) bool {
	for i, w := range fields {
		if (w == "-j" || w == "-g") && i+1 < len(fields) && hasPrefix(fields[i+1], chainPrefixes) {
			return true
		}
	}
	return false
}

func ownSets() ([]string, error) {
	names, err := output("ipset", "list", "-n")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range strings.Fields(names) {
		if hasPrefix(n, setPrefixes) {
			out = append(out, n)
		}
	}
	return out, nil
}

// cleanup removes the jumps from the built-in chains, then kube-router's
// chains (flushed first: they jump to one another), then its sets (flushed
// first: a list:set names others).
func cleanup() error {
	var errs []error
	for _, builtin := range builtinChains {
		errs = append(errs, deleteJumps(builtin))
	}
	dump, err := output("iptables-save", "-t", "filter")
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	chains, _ := inDump(dump)
	for _, c := range chains {
		errs = append(errs, run("iptables", "-w", "-t", "filter", "-F", c))
	}
	for _, c := range chains {
		errs = append(errs, run("iptables", "-w", "-t", "filter", "-X", c))
	}
	sets, err := ownSets()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, s := range sets {
		errs = append(errs, run("ipset", "flush", s))
	}
	for _, s := range sets {
		errs = append(errs, run("ipset", "destroy", s))
	}
	return errors.Join(errs...)
}

// deleteJumps deletes, by number, each rule of builtin that jumps to a
// chain of kube-router's (its rules carry quoted comments, which a number
// spares re-quoting).
func deleteJumps(builtin string) error {
	for range 100 {
		rules, err := output("iptables", "-w", "-t", "filter", "-S", builtin)
		if err != nil {
			return err
		}
		n := 0
		found := false
		for _, line := range strings.Split(rules, "\n") {
			if !strings.HasPrefix(line, "-A ") {
				continue
			}
			n++
			if jumpsToOwn(strings.Fields(line)) {
				found = true
				break
			}
		}
		if !found {
			return nil
		}
		if err := run("iptables", "-w", "-t", "filter", "-D", builtin, fmt.Sprint(n)); err != nil {
			return err
		}
	}
	return fmt.Errorf("more than 100 kube-router jumps in %s", builtin)
}

func output(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return string(out), nil
}

// run runs a command and returns its output in the error.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
