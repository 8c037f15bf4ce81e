// Package v1alpha1 holds the Scanner API, group crowsnest.dev, version
// v1alpha1: a namespaced object that asks the operator to scan the images of
// every running Pod in its namespace with Grype.
//
// +kubebuilder:object:generate=true
// +groupName=crowsnest.dev
package v1alpha1
