//go:build !race

package rematch

// raceDetector is whether the tests run under the race detector.
const raceDetector = false
