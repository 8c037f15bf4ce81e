package scanner

import (
	"hash/fnv"
	"time"
)

// rescanJitter is where, in [-1, 1), a digest's rescan falls within the
// jitter window. It is fixed per digest, so the due
// time does not move between reconciles, and spread over digests, so a
// sidecar image running everywhere and reports stored in one wave do not
// all come due in the same second.
func rescanJitter(digest string) float64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(digest))
	return float64(h.Sum64()%20000)/10000 - 1
}

// jittered is the rescan interval of digest: interval moved by up to
// ±fraction of it.
func jittered(interval time.Duration, digest string, fraction float64) time.Duration {
	if interval <= 0 || fraction <= 0 {
		return interval
	}
	return interval + time.Duration(float64(interval)*fraction*rescanJitter(digest))
}
