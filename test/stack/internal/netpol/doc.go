// Package netpol enforces NetworkPolicies on the local stack's real node:
// kube-router's network policy controller alone (--run-firewall, no
// routing, no service proxy), built from the Go module proxy at a pinned
// version (hack/tools.sh kube-router), as a process of the stack beside
// kube-proxy.
//
// kube-router writes iptables filter chains (KUBE-ROUTER-INPUT, -FORWARD,
// -OUTPUT, KUBE-NWPLCY-*, KUBE-POD-FW-*), jumps to them from INPUT, FORWARD
// and OUTPUT, and ipsets (KUBE-SRC-*, KUBE-DST-*). It matches only the Pods
// whose hostIP is its node's address, so another stack's Pods are left
// alone, but each kube-router deletes the chains and sets it did not write
// itself: a machine-wide lock lets one stack at a time run it (Start waits
// for it or returns ErrBusy).
//
// kube-router removes none of that when it stops, and its own
// --cleanup-config also flushes every IPVS service and deletes links of its
// router and proxy. So this package removes exactly what its firewall
// wrote, on every exit path (Stop), and Start first sweeps what a killed
// stack left (it holds the lock, so every such chain and set is a
// leftover). Leftovers lists what remains, for Stop's check and tests.
//
// kube-network-policies (sigs.k8s.io) cannot run on this machine's kernel:
// it hands packets to userspace with the nftables queue expression, and the
// kernel is built without CONFIG_NFT_QUEUE (`nft add rule … queue num 100`
// fails with "No such file or directory" while the same rule with accept
// is added). kube-router needs only iptables, ipset (hash:ip, hash:net,
// list:set), xt_set, physdev, NFLOG and REJECT, which are built in.
package netpol
