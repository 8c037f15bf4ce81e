package scanner

import "time"

// backoff is the wait before retrying a failed scan: base, doubling with
// each failed attempt, capped at max.
type backoff struct {
	base, max time.Duration
}

// delay returns the wait after the given failed attempt (1-based).
func (b backoff) delay(attempt int) time.Duration {
	d := b.base
	for i := 1; i < attempt && d < b.max; i++ {
		d *= 2
	}
	return min(d, b.max)
}
