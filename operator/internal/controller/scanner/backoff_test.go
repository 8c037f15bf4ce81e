package scanner

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	b := backoff{base: time.Minute, max: time.Hour}
	for attempt, want := range map[int]time.Duration{1: time.Minute, 2: 2 * time.Minute, 3: 4 * time.Minute, 6: 32 * time.Minute, 7: time.Hour, 50: time.Hour} {
		if got := b.delay(attempt); got != want {
			t.Errorf("delay(%d) = %v, want %v", attempt, got, want)
		}
	}
}
