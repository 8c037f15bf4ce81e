package v1

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// StreamConfig is the CROWSNEST stream's configuration. Publishers create or
// update it idempotently at start-up.
func StreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        StreamName,
		Description: "Crowsnest scan and report events",
		Subjects:    []string{StreamSubjects},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		MaxAge:      7 * 24 * time.Hour,
		Duplicates:  DuplicateWindow,
	}
}

// EnsureStream creates the stream or updates it to StreamConfig.
func EnsureStream(ctx context.Context, js jetstream.JetStream) (jetstream.Stream, error) {
	s, err := js.CreateOrUpdateStream(ctx, StreamConfig())
	if err != nil {
		return nil, fmt.Errorf("create or update stream %s: %w", StreamName, err)
	}
	return s, nil
}
