// Package v1alpha1 holds the Scanner API, group crowsnest.dev, version
// v1alpha1: a namespaced object that asks the operator to scan the images of
// every running Pod in its namespace with Grype, and the cluster-scoped
// ClusterScanner, which generates a Scanner in every namespace it covers;
// and the triage decisions results-api applies to reads: the namespaced
// VulnerabilityException and the cluster-scoped ClusterVulnerabilityException,
// and the OpenVEX documents it imports: VEXDocument and ClusterVEXDocument.
//
// +kubebuilder:object:generate=true
// +groupName=crowsnest.dev
package v1alpha1
