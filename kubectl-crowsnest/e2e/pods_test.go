package e2e

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

var nsSeq atomic.Int64

// namespace creates a namespace with a fresh name. Its Pods go when the
// test ends: there is no namespace controller here to delete them, and
// cluster-wide reads (cve) must see only the test's own.
func namespace(t *testing.T, prefix string) string {
	t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("%s-%d", prefix, nsSeq.Add(1))
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Pods on no node are deleted at once.
		if err := kube.CoreV1().Pods(name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Errorf("delete pods of %s: %v", name, err)
		}
	})
	return name
}

// podSpec describes one container of a test Pod: its image, and the
// imageID its status reports ("" for a container that has not started).
type podContainer struct {
	name, image, imageID string
	init                 bool
}

// runPod creates a Pod and writes the container statuses a kubelet would
// (there is no kubelet here): running, with the given imageIDs. A non-empty
// replicaSet makes the Pod owned by that ReplicaSet of a Deployment, with
// the pod-template-hash label the Deployment controller sets.
func runPod(t *testing.T, ns, name, replicaSet, hash string, containers ...podContainer) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if replicaSet != "" {
		pod.Labels = map[string]string{"pod-template-hash": hash}
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: replicaSet,
			UID: types.UID("uid-" + replicaSet), Controller: ptr.To(true)}}
	}
	for _, c := range containers {
		spec := corev1.Container{Name: c.name, Image: c.image}
		if c.init {
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, spec)
		} else {
			pod.Spec.Containers = append(pod.Spec.Containers, spec)
		}
	}
	created, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	started := metav1.Now()
	for _, c := range containers {
		if c.imageID == "" {
			continue
		}
		st := corev1.ContainerStatus{Name: c.name, Image: c.image, ImageID: c.imageID, Ready: !c.init,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}
		if c.init {
			st.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: started, FinishedAt: started}}
			created.Status.InitContainerStatuses = append(created.Status.InitContainerStatuses, st)
		} else {
			created.Status.ContainerStatuses = append(created.Status.ContainerStatuses, st)
		}
	}
	created.Status.Phase = corev1.PodRunning
	if _, err := kube.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// workloads sets up what runs in the tests' cluster:
//
//	shop/web (Deployment web): init migrate=debian, app=alpine, sidecar=gobinary
//	shop/pending: a container that has not started
//	jobs/batch (bare Pod): node
//
// clean's image runs nowhere.
func workloads(t *testing.T, fx map[string]fixture) (shop, jobs string) {
	t.Helper()
	shop, jobs = namespace(t, "shop"), namespace(t, "jobs")
	runPod(t, shop, "web-7c9d8f6b5d-x2x7q", "web-7c9d8f6b5d", "7c9d8f6b5d",
		podContainer{name: "migrate", image: "crowsnest.dev/demo/debian:12", imageID: "docker-pullable://" + fx["debian"].Image, init: true},
		podContainer{name: "app", image: "crowsnest.dev/demo/alpine:3.18", imageID: fx["alpine"].Image},
		podContainer{name: "sidecar", image: "crowsnest.dev/demo/gobinary:1", imageID: fx["gobinary"].Image})
	runPod(t, shop, "pending", "", "", podContainer{name: "app", image: "crowsnest.dev/demo/alpine:3.18"})
	runPod(t, jobs, "batch", "", "", podContainer{name: "main", image: "crowsnest.dev/demo/node:20", imageID: fx["node"].Image})
	return shop, jobs
}
