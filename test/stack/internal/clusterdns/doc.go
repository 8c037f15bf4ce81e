// Package clusterdns runs the local stack's cluster DNS: CoreDNS (built from
// the pinned module by hack/tools.sh coredns, with only the plugins it
// needs) on the real node's gateway, port 53, answering the cluster domain
// (`<svc>.<ns>.svc.cluster.local`, Pod and reverse records) from the API
// server through its kubernetes plugin, with a read-only identity.
//
// It forwards nothing: names outside the cluster's zones get REFUSED, so a
// Pod on the real node never reaches the host's resolvers through it (the
// kubelet's resolvConf stays empty).
package clusterdns
