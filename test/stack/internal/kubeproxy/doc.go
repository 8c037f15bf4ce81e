// Package kubeproxy runs kube-proxy (iptables mode, built from the pinned
// Kubernetes module) for the local stack's real node, so that ClusterIP
// Services route from the node's Pods as in a cluster.
//
// kube-proxy programs the host's one netfilter ruleset: its chains
// (KUBE-SERVICES, KUBE-SVC-*, KUBE-SEP-*, …) have fixed names, and each
// kube-proxy deletes the service chains it did not write itself. Two
// kube-proxies on one machine would undo each other, so a machine-wide lock
// lets one stack at a time run it (Start returns ErrBusy to the others).
// What its rules match is kept to the stack's own addresses: the Service
// CIDR and the node's Pod subnet (clusterCIDR), NodePorts only on the
// node's gateway, no localhost NodePorts (route_localnet stays 0), and no
// conntrack sysctl changed.
//
// Every exit path removes the rules again: Stop runs `kube-proxy --cleanup`
// and removes the copy of the kubelet's KUBE-FIREWALL chain kube-proxy adds
// (when it was not there before), and Start first sweeps what a killed
// stack left (it holds the lock, so every kube-proxy chain there is a
// leftover). Leftovers lists what remains, for the stop check and tests.
package kubeproxy
