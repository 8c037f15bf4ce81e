// Package cli holds what the command lines of Crowsnest's binaries share:
// flag defaults read from environment variables, and the logger of
// --log-level and --log-format.
package cli

import (
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"
)

// EnvDuration is s as a duration, or def when s is empty or not one.
func EnvDuration(s string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(s); err == nil {
		return d
	}
	return def
}

// EnvInt is s as an integer, or def when s is empty or not one.
func EnvInt(s string, def int64) int64 {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	return def
}

// EnvBool is s as a boolean (strconv.ParseBool), or def when s is empty or
// not one.
func EnvBool(s string, def bool) bool {
	if b, err := strconv.ParseBool(s); err == nil {
		return b
	}
	return def
}

// LogHandler is the slog handler of --log-format: json (the default, for
// log collectors) or text (key=value, for a terminal).
func LogHandler(format string, w io.Writer, level slog.Level) (slog.Handler, error) {
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case "json":
		return slog.NewJSONHandler(w, opts), nil
	case "text":
		return slog.NewTextHandler(w, opts), nil
	default:
		return nil, fmt.Errorf("--log-format %q: want json or text", format)
	}
}

// NewLogger is the logger of --log-level (debug, info, warn, error) and
// --log-format.
func NewLogger(level, format string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	h, err := LogHandler(format, w, l)
	if err != nil {
		return nil, err
	}
	return slog.New(h), nil
}
