package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of the Scanner and
// ClusterScanner kinds.
var GroupVersion = schema.GroupVersion{Group: "crowsnest.dev", Version: "v1alpha1"}

var (
	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Scanner{}, &ScannerList{}, &ClusterScanner{}, &ClusterScannerList{},
		&VulnerabilityException{}, &VulnerabilityExceptionList{}, &ClusterVulnerabilityException{}, &ClusterVulnerabilityExceptionList{},
		&VEXDocument{}, &VEXDocumentList{}, &ClusterVEXDocument{}, &ClusterVEXDocumentList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
