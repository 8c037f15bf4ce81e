package exception

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The imported OpenVEX documents (crowsnest.dev/v1alpha1).
var (
	VEXDocumentResource        = schema.GroupVersionResource{Group: "crowsnest.dev", Version: "v1alpha1", Resource: "vexdocuments"}
	ClusterVEXDocumentResource = schema.GroupVersionResource{Group: "crowsnest.dev", Version: "v1alpha1", Resource: "clustervexdocuments"}
)

// Document is one imported OpenVEX document as results-api read it: its
// provenance and statements when it parses, the reason when it does not
// (then none of its statements applies).
type Document struct {
	Ref
	Provenance *Provenance // nil when Err is set
	Statements int         // rules (statement × image product) it adds
	Err        error
}

// Valid reports whether the document parsed.
func (d *Document) Valid() bool { return d.Err == nil }

// DocumentFromUnstructured reads a VEXDocument or ClusterVEXDocument: its
// rules, and what the audit says of it.
func DocumentFromUnstructured(u *unstructured.Unstructured) ([]*Exception, Document) {
	kind := KindVEXDocument
	if u.GetNamespace() == "" {
		kind = KindClusterVEXDocument
	}
	d := Document{Ref: Ref{Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName()}}
	text, found, err := unstructured.NestedString(u.Object, "spec", "document")
	switch {
	case err != nil:
		d.Err = fmt.Errorf("spec.document: %w", err)
		return nil, d
	case !found:
		d.Err = fmt.Errorf("spec.document is missing")
		return nil, d
	}
	rules, prov, err := ParseOpenVEX(d.Ref, []byte(text))
	if err != nil {
		d.Err = err
		return nil, d
	}
	d.Provenance, d.Statements = prov, len(rules)
	return rules, d
}
