package main

import (
	"runtime/debug"
	"testing"
)

func TestSetGCPercent(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	for _, tc := range []struct {
		name  string
		gogc  string
		limit int64
		want  int
	}{
		{"a memory limit, GOGC unset: the matcher's target", "", 900 << 20, matchGCPercent},
		{"no memory limit: Go's default stays", "", 0, 100},
		{"GOGC set: the operator's choice stays", "50", 900 << 20, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			if tc.gogc != "" {
				debug.SetGCPercent(50) // what the runtime read from GOGC=50
			}
			env := map[string]string{"GOGC": tc.gogc}
			if got := setGCPercent(func(k string) string { return env[k] }, tc.limit); got != tc.want {
				t.Errorf("setGCPercent = %d, want %d", got, tc.want)
			}
			if now := debug.SetGCPercent(100); now != tc.want {
				t.Errorf("the runtime's target is %d, want %d", now, tc.want)
			}
		})
	}
}
