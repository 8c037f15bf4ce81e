package charttest

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Applier sends objects to a real API server with a server-side apply
// dry-run: the server decodes, defaults, validates (strict field validation,
// so an unknown or misspelt field fails) and runs admission, but stores
// nothing.
type Applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

// NewApplier connects to the API server of cfg.
func NewApplier(cfg *rest.Config) (*Applier, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

// Reset forgets cached discovery, e.g. after installing CRDs.
func (a *Applier) Reset() { a.mapper.Reset() }

// DryRunApply applies obj with dryRun=All and fieldValidation=Strict.
func (a *Applier) DryRunApply(ctx context.Context, obj *unstructured.Unstructured) error {
	return a.apply(ctx, obj, []string{metav1.DryRunAll})
}

// Apply applies obj for real (namespaces and CRDs the dry-run needs).
func (a *Applier) Apply(ctx context.Context, obj *unstructured.Unstructured) error {
	return a.apply(ctx, obj, nil)
}

func (a *Applier) apply(ctx context.Context, obj *unstructured.Unstructured, dryRun []string) error {
	gvk := obj.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("%s %s: no such resource on the server: %w", gvk, obj.GetName(), err)
	}
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if m.Scope.Name() == "namespace" {
		ri = a.dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
	}
	_, err = ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
		DryRun: dryRun, FieldManager: "charttest", Force: new(true), FieldValidation: "Strict",
	})
	if err != nil {
		return fmt.Errorf("%s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
