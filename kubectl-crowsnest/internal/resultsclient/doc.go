// Package resultsclient reads results-api's REST API (results-api/api/openapi.yaml)
// either through the Kubernetes API server's service proxy, with the user's own
// kubeconfig credentials, or directly at a URL (a port-forward) with a bearer
// token. It turns every refusal into an error that says what to do about it.
package resultsclient
