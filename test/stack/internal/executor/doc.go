// Package executor is the stack's one stand-in: a kubelet for scan-Job Pods
// on kwok's fake Nodes. It runs a Pod's containers in order as local
// processes — the real Grype binary for the init container, then the real
// uploader — with the container's args and env, emptyDirs as temp dirs, the
// projected service-account token fetched through the TokenRequest API, and
// writes container states, exit codes and the Pod phase back into the Pod
// status like a kubelet, so the Job controller completes or fails the Job.
// Every other Pod is left to kwok.
//
// At most Parallel Pods run at once; the others wait, unstarted.
//
// Hold is a test hook: it keeps one digest's scan Pods after their init
// container, Running, until the test releases them, so a test can act while
// a scan runs. A held Pod keeps its Parallel slot (it is running, as far as
// the cluster can tell) and nothing else: no lock is held while it waits, so
// the other Pods run in the remaining slots.
package executor
