// Package cli is `kubectl crowsnest`: one cobra command per question
// (images, image, cve, changes, why), kubectl's own connection flags
// (--kubeconfig, --context, -n, --as, …) and the flags that find results-api.
package cli
