// Package workload creates the demo workloads (a namespace, a Scanner and
// Pods running the demo images) and plays the part of the kubelet that kwok
// leaves out: it writes each running container's imageID (the registry
// digest) into the Pod status.
package workload
