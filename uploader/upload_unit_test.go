package main

import (
	"testing"
	"time"
)

func TestEndpointURL(t *testing.T) {
	d := "sha256:" + "ab"
	for _, tc := range []struct{ api, image, want string }{
		{"http://api:8080", "", "http://api:8080/api/v1/reports/" + d},
		{"http://api:8080/", "r/app@sha256:1", "http://api:8080/api/v1/reports/" + d + "?image=r%2Fapp%40sha256%3A1"},
		{"https://h/prefix/", "x", "https://h/prefix/api/v1/reports/" + d + "?image=x"},
	} {
		got, err := endpointURL(tc.api, d, tc.image)
		if err != nil || got != tc.want {
			t.Errorf("endpointURL(%q, %q) = %q, %v; want %q", tc.api, tc.image, got, err, tc.want)
		}
	}
}

func TestBackoffFullJitterIsCapped(t *testing.T) {
	b := backoff{base: 100 * time.Millisecond, max: time.Second}
	for attempt, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 60: time.Second} {
		if got := b.ceiling(attempt); got != want {
			t.Errorf("ceiling(%d) = %v, want %v", attempt, got, want)
		}
	}
	// Full jitter: the wait is drawn from [0, ceiling).
	var seen int64
	b.rand = func(n int64) int64 { seen = n; return n - 1 }
	if d := b.delay(3); d != 400*time.Millisecond-1 || seen != int64(400*time.Millisecond) {
		t.Errorf("delay(3) = %v (rand bound %d)", d, seen)
	}
	b.rand = nil
	for range 1000 {
		if d := b.delay(10); d < 0 || d >= time.Second {
			t.Fatalf("delay out of [0, max): %v", d)
		}
	}
}

func TestAPIMessage(t *testing.T) {
	if got := apiMessage([]byte(`{"error":{"code":"forbidden","message":"wrong token"}}`)); got != "forbidden: wrong token" {
		t.Errorf("got %q", got)
	}
	long := make([]byte, 500)
	for i := range long {
		long[i] = 'x'
	}
	if got := apiMessage(long); len(got) > 210 {
		t.Errorf("not truncated: %d bytes", len(got))
	}
}
