//go:build race

package rematch

// raceDetector is whether the tests run under the race detector, which
// slows Grype's matching several times over (see TestSkipProperty).
const raceDetector = true
