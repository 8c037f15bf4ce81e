// Package storage is the stack's StorageClass: local PersistentVolumes on
// the real node, provisioned for every claim of the class, removed with it.
// A cluster's CSI driver or local-path provisioner does this job; charts
// with StatefulSets and persistent volumes need one to install at all.
package storage

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Class is the StorageClass's name; it is the cluster's default.
const Class = "crowsnest-local"

// provisioner names this provisioner in the class and on its volumes.
const provisioner = "crowsnest.dev/local-stack"

// Provisioner turns claims of Class into local volumes under Dir, on Node.
type Provisioner struct {
	Client kubernetes.Interface
	Dir    string // one folder per volume; removed with the volume
	Node   string // the node the volumes live on (kubernetes.io/hostname)
	Log    *slog.Logger
}

// Install creates Class as the default StorageClass (Immediate binding:
// there is one node).
func (p *Provisioner) Install(ctx context.Context) error {
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: Class, Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner:       provisioner,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
	if _, err := p.Client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create StorageClass %s: %w", Class, err)
	}
	return os.MkdirAll(p.Dir, 0o711)
}

// Run provisions and deletes volumes until ctx ends, polling twice a
// second (a handful of claims: no informer needed).
func (p *Provisioner) Run(ctx context.Context) error {
	for {
		if err := p.sync(ctx); err != nil && ctx.Err() == nil {
			p.Log.Warn("storage provisioner", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (p *Provisioner) sync(ctx context.Context) error {
	claims, err := p.Client.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range claims.Items {
		c := &claims.Items[i]
		if c.Spec.VolumeName != "" || c.DeletionTimestamp != nil || ptr.Deref(c.Spec.StorageClassName, "") != Class {
			continue
		}
		if err := p.provision(ctx, c); err != nil {
			return err
		}
	}
	vols, err := p.Client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, v := range vols.Items {
		if v.Annotations["pv.kubernetes.io/provisioned-by"] != provisioner || v.Status.Phase != corev1.VolumeReleased {
			continue
		}
		if err := os.RemoveAll(v.Spec.Local.Path); err != nil {
			return err
		}
		if err := p.Client.CoreV1().PersistentVolumes().Delete(ctx, v.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete volume %s: %w", v.Name, err)
		}
		p.Log.Info("volume deleted", "volume", v.Name)
	}
	return nil
}

// provision makes the folder and a local PersistentVolume bound to the
// claim (claimRef set: the PV controller completes the binding). The
// kubelet applies the Pod's fsGroup to local volumes.
func (p *Provisioner) provision(ctx context.Context, c *corev1.PersistentVolumeClaim) error {
	name := "pvc-" + string(c.UID)
	path := filepath.Join(p.Dir, name)
	if err := os.MkdirAll(path, 0o750); err != nil {
		return err
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": provisioner}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: c.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   c.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              Class,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: c.Namespace, Name: c.Name, UID: c.UID},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: path}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{p.Node}}},
			}}}},
		},
	}
	if _, err := p.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		return nil // made on an earlier pass; the PV controller has not bound it yet
	} else if err != nil {
		return fmt.Errorf("create volume for %s/%s: %w", c.Namespace, c.Name, err)
	}
	p.Log.Info("volume provisioned", "namespace", c.Namespace, "claim", c.Name, "volume", name)
	return nil
}
