// Package discovery turns running Pods into the set of image digests that
// need a report: it normalizes container imageIDs to repository@sha256:<hex>,
// skips ignored and not-yet-started Pods, and trims Pods in the informer
// cache to the few fields the operator reads (TransformPod).
package discovery
