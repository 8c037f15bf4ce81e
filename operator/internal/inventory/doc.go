// Package inventory publishes which workloads run which image digests, per
// namespace, as crowsnest.inventory.snapshot events.
//
// Each workload Pod of the pod cache is resolved to its workload through
// its controller owner: a ReplicaSet to its Deployment, a Job to its
// CronJob (Owners, metadata-only informers kept as a few strings per
// object); StatefulSets, DaemonSets and other owners are taken as they are,
// and a Pod without an owner is its own workload. Build turns a namespace's
// Pods into a sorted, bounded eventsv1.InventorySnapshot whose id is derived
// from its content; Publisher (leader only) publishes each namespace once at
// start-up and then whenever its content changes, coalescing bursts of Pod
// changes, and retries a failed publish with the namespace's latest content.
package inventory
