package main

import (
	"fmt"
	"io"

	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// loggerOptions build the logger writing to w: --log-format and --log-level,
// then whichever of controller-runtime's --zap-* flags were given.
func (o *Options) loggerOptions(w io.Writer) ([]zap.Opts, error) {
	level := zapcore.InfoLevel
	if err := level.UnmarshalText([]byte(o.LogLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	z := o.Zap
	return []zap.Opts{
		zap.UseDevMode(o.LogFormat == "console"), zap.Level(level), zap.WriteTo(w),
		func(zo *zap.Options) {
			if z.Development {
				zo.Development = true
			}
			if z.NewEncoder != nil {
				zo.NewEncoder = z.NewEncoder
			}
			if z.Level != nil {
				zo.Level = z.Level
			}
			if z.StacktraceLevel != nil {
				zo.StacktraceLevel = z.StacktraceLevel
			}
			if z.TimeEncoder != nil {
				zo.TimeEncoder = z.TimeEncoder
			}
		},
	}, nil
}
