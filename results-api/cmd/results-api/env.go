package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// The env* helpers turn a CROWSNEST_* variable into a flag default: a value
// that does not parse, or lies outside what the flag accepts (envInt and
// envDuration: positive; envDurationZero: not negative), leaves the built-in
// default, so that --help shows what applies (booleans: cli.EnvBool).

func envInt(v string, def int64) int64 {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
		return n
	}
	return def
}

func envDuration(v string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d
	}
	return def
}

// envDurationZero is envDuration accepting 0 (a feature turned off).
func envDurationZero(v string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return d
	}
	return def
}

func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read secret file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
