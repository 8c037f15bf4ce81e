// Package dockerconfig merges the pull secrets a scan Job mounts into the one
// Docker config file Grype reads from $DOCKER_CONFIG. The operator never
// reads Secrets: the Job projects each of the scanned Pods' imagePullSecrets
// into its own folder, and the uploader's docker-config step merges them
// inside the Pod. Both Secret types are read: kubernetes.io/dockerconfigjson
// (a Docker config) and the legacy kubernetes.io/dockercfg (the bare map of
// registry to credentials).
package dockerconfig
