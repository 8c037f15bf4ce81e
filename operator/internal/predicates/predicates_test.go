package predicates

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/event"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

func TestRequestedAtChanged(t *testing.T) {
	with := func(annotations map[string]string) *crowsnestv1alpha1.Scanner {
		s := &crowsnestv1alpha1.Scanner{}
		s.Annotations = annotations
		return s
	}
	at := func(v string) map[string]string { return map[string]string{crowsnestv1alpha1.AnnotationRequestedAt: v} }
	for _, tt := range []struct {
		name     string
		old, new map[string]string
		want     bool
	}{
		{"set", nil, at("1"), true},
		{"changed", at("1"), at("2"), true},
		{"removed", at("1"), nil, true},
		{"unchanged", at("1"), at("1"), false},
		{"another annotation", nil, map[string]string{"x": "y"}, false},
	} {
		if got := RequestedAtChanged.Update(event.UpdateEvent{ObjectOld: with(tt.old), ObjectNew: with(tt.new)}); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	if RequestedAtChanged.Update(event.UpdateEvent{}) {
		t.Error("an update without objects passed")
	}
}
