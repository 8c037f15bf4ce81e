package v1alpha1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEffectiveSpec(t *testing.T) {
	var zero ScannerSpec
	if zero.EffectiveIgnoreLabel() != DefaultIgnoreLabel || zero.EffectiveMaxConcurrentScans() != 2 ||
		zero.EffectiveRescanInterval() != 24*time.Hour || zero.EffectiveScanTimeout() != 10*time.Minute {
		t.Errorf("zero spec defaults wrong")
	}
	set := ScannerSpec{IgnoreLabel: "skip", MaxConcurrentScans: 7,
		RescanInterval: &metav1.Duration{}, ScanTimeout: &metav1.Duration{Duration: time.Minute}}
	if set.EffectiveIgnoreLabel() != "skip" || set.EffectiveMaxConcurrentScans() != 7 ||
		set.EffectiveRescanInterval() != 0 || set.EffectiveScanTimeout() != time.Minute {
		t.Errorf("explicit values not kept; rescanInterval 0 must mean off")
	}
}

func TestDeepCopyIsIndependent(t *testing.T) {
	s := &Scanner{Status: ScannerStatus{RecentFailures: []ScanFailure{{Digest: "a", NextRetry: &metav1.Time{}}}}}
	c := s.DeepCopy()
	c.Status.RecentFailures[0].Digest = "b"
	c.Status.RecentFailures[0].NextRetry.Time = time.Unix(1, 0)
	if s.Status.RecentFailures[0].Digest != "a" || !s.Status.RecentFailures[0].NextRetry.IsZero() {
		t.Error("deep copy shares memory with the original")
	}
}
