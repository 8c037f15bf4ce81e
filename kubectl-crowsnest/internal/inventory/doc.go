// Package inventory reads what runs from Pods the API server returns: each
// container's image digest (from its status's imageID) and the workload
// that owns the Pod. The plugin uses it for `why pod/…`, for `image
// pod/…`, and to filter by namespace against a results-api that cannot.
package inventory
