package v1_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

func inventory() eventsv1.InventorySnapshot {
	return eventsv1.InventorySnapshot{Namespace: "shop", Labels: map[string]string{"team": "a", "env": "prod"}, Workloads: []eventsv1.InventoryWorkload{
		{Kind: eventsv1.KindDeployment, Name: "web", Containers: []eventsv1.InventoryContainer{
			{Name: "nginx", Image: "nginx:1.27", Digest: digest, Pods: 3},
			{Name: "sidecar", Image: "envoy:1", Digest: "sha256:" + fmt.Sprintf("%064x", 1), Init: true, Pods: 3}}},
		{Kind: eventsv1.KindPod, Name: "debug", Containers: []eventsv1.InventoryContainer{{Name: "sh", Image: "busybox", Digest: digest, Pods: 1}}},
	}}
}

func TestInventoryIDDependsOnEveryField(t *testing.T) {
	base := eventsv1.InventoryID(inventory())
	if again := eventsv1.InventoryID(inventory()); again != base {
		t.Fatalf("same content, ids %s and %s", base, again)
	}
	for name, mutate := range map[string]func(*eventsv1.InventorySnapshot){
		"namespace": func(s *eventsv1.InventorySnapshot) { s.Namespace = "shop2" },
		"label":     func(s *eventsv1.InventorySnapshot) { s.Labels["team"] = "b" },
		"kind":      func(s *eventsv1.InventorySnapshot) { s.Workloads[0].Kind = eventsv1.KindStatefulSet },
		"name":      func(s *eventsv1.InventorySnapshot) { s.Workloads[0].Name = "web2" },
		"container": func(s *eventsv1.InventorySnapshot) { s.Workloads[0].Containers[0].Name = "nginx2" },
		"image":     func(s *eventsv1.InventorySnapshot) { s.Workloads[0].Containers[0].Image = "nginx:1.28" },
		"digest": func(s *eventsv1.InventorySnapshot) {
			s.Workloads[1].Containers[0].Digest = "sha256:" + fmt.Sprintf("%064x", 2)
		},
		"init":      func(s *eventsv1.InventorySnapshot) { s.Workloads[0].Containers[1].Init = false },
		"pods":      func(s *eventsv1.InventorySnapshot) { s.Workloads[0].Containers[0].Pods = 2 },
		"truncated": func(s *eventsv1.InventorySnapshot) { s.Truncated = true },
		"empty":     func(s *eventsv1.InventorySnapshot) { s.Workloads = nil },
		"previous":  func(s *eventsv1.InventorySnapshot) { s.Previous = "0123" }, // A, B, A is not a duplicate of the first A
	} {
		s := inventory()
		mutate(&s)
		if eventsv1.InventoryID(s) == base {
			t.Errorf("changing the %s keeps the id", name)
		}
	}
}

func TestInventoryDigests(t *testing.T) {
	got := inventory().Digests()
	if len(got) != 2 || got[0] != "sha256:"+fmt.Sprintf("%064x", 1) || got[1] != digest {
		t.Fatalf("Digests() = %v", got)
	}
}

func TestValidateRejectsBadInventory(t *testing.T) {
	now := time.Now()
	tooMany := eventsv1.InventoryWorkload{Kind: eventsv1.KindDaemonSet, Name: "big"}
	for i := 0; i <= eventsv1.MaxInventoryEntries; i++ {
		tooMany.Containers = append(tooMany.Containers, eventsv1.InventoryContainer{Name: fmt.Sprint(i), Digest: digest, Pods: 1})
	}
	labels := map[string]string{}
	for i := 0; i <= eventsv1.MaxInventoryLabels; i++ {
		labels[fmt.Sprint("l", i)] = "x"
	}
	for name, mutate := range map[string]func(*eventsv1.InventorySnapshot){
		"no namespace":    func(s *eventsv1.InventorySnapshot) { s.Namespace = "" },
		"bad digest":      func(s *eventsv1.InventorySnapshot) { s.Workloads[0].Containers[0].Digest = "sha256:ABC" },
		"no kind":         func(s *eventsv1.InventorySnapshot) { s.Workloads[0].Kind = "" },
		"no name":         func(s *eventsv1.InventorySnapshot) { s.Workloads[1].Name = "" },
		"negative pods":   func(s *eventsv1.InventorySnapshot) { s.Workloads[0].Containers[0].Pods = -1 },
		"too many":        func(s *eventsv1.InventorySnapshot) { s.Workloads = append(s.Workloads, tooMany) },
		"too many labels": func(s *eventsv1.InventorySnapshot) { s.Labels = labels },
	} {
		s := inventory()
		mutate(&s)
		ev, err := eventsv1.New(eventsv1.SourceOperator, eventsv1.TypeInventorySnapshot, eventsv1.InventoryID(s), s.Namespace, now, s)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(ev)
		if _, err := eventsv1.Parse(eventsv1.SubjectInventorySnapshot, raw, now, time.Minute); !errors.Is(err, eventsv1.ErrInvalidEvent) || eventsv1.Reason(err) != eventsv1.ReasonPayload {
			t.Errorf("%s: err = %v, want an invalid payload", name, err)
		}
	}
	// An empty namespace (nothing runs there any more) is a valid snapshot.
	s := eventsv1.InventorySnapshot{Namespace: "gone"}
	ev, err := eventsv1.New(eventsv1.SourceOperator, eventsv1.TypeInventorySnapshot, eventsv1.InventoryID(s), s.Namespace, now, s)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(ev)
	if _, err := eventsv1.Parse(eventsv1.SubjectInventorySnapshot, raw, now, time.Minute); err != nil {
		t.Fatalf("empty snapshot: %v", err)
	}
}
