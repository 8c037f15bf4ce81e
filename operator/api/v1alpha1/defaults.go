package v1alpha1

import "time"

// Defaults that mirror the CRD's, for objects that never went through the
// API server (tests, zero values).
const (
	DefaultMaxConcurrentScans = 2
	DefaultRescanInterval     = 24 * time.Hour
	DefaultScanTimeout        = 10 * time.Minute
)

// EffectiveIgnoreLabel returns spec.ignoreLabel or its default.
func (s *ScannerSpec) EffectiveIgnoreLabel() string {
	if s.IgnoreLabel == "" {
		return DefaultIgnoreLabel
	}
	return s.IgnoreLabel
}

// EffectiveMaxConcurrentScans returns spec.maxConcurrentScans or its default.
func (s *ScannerSpec) EffectiveMaxConcurrentScans() int {
	if s.MaxConcurrentScans < 1 {
		return DefaultMaxConcurrentScans
	}
	return int(s.MaxConcurrentScans)
}

// EffectiveRescanInterval returns spec.rescanInterval or its default; 0
// means rescans are off.
func (s *ScannerSpec) EffectiveRescanInterval() time.Duration {
	if s.RescanInterval == nil {
		return DefaultRescanInterval
	}
	return s.RescanInterval.Duration
}

// EffectiveScanTimeout returns spec.scanTimeout or its default.
func (s *ScannerSpec) EffectiveScanTimeout() time.Duration {
	if s.ScanTimeout == nil || s.ScanTimeout.Duration <= 0 {
		return DefaultScanTimeout
	}
	return s.ScanTimeout.Duration
}
