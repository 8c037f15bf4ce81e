package v1

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// StreamOwner is the one user that may change the stream's configuration
// (STREAM.UPDATE): an update can cut the limits and so purge the stream.
// It calls EnsureStream; the other publishers call OpenStream.
const StreamOwner = UserResultsAPI

// EnsureStream creates the stream or updates it to StreamConfig; only
// StreamOwner may update it. A stream that already has that configuration
// is left alone: the owner calls this at start-up and on reconnect, and an
// update is a write on the server
// (nats-server v2.15 races a stream update against a consumer being created
// at the same moment).
//
// A missing stream is created, not "created or updated": two services
// starting together both find it missing, and the second one's update would
// land while the first creates its consumer. Only a stream whose
// configuration really differs (an upgrade) is updated.
func EnsureStream(ctx context.Context, js jetstream.JetStream) (jetstream.Stream, error) {
	want := StreamConfig()
	s, err := js.Stream(ctx, StreamName)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		created, cerr := js.CreateStream(ctx, want)
		if cerr == nil {
			return created, nil
		}
		if !errors.Is(cerr, jetstream.ErrStreamNameAlreadyInUse) {
			return nil, fmt.Errorf("create stream %s: %w", StreamName, cerr)
		}
		// Another service created it meanwhile, with another configuration.
		s, err = js.Stream(ctx, StreamName)
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", StreamName, err)
	}
	if sameStream(s.CachedInfo().Config, want) {
		return s, nil
	}
	s, err = js.UpdateStream(ctx, want)
	if err != nil {
		return nil, fmt.Errorf("update stream %s: %w", StreamName, err)
	}
	return s, nil
}

// OpenStream creates the stream if it is missing (with StreamConfig, which
// cannot lose a message) and otherwise returns it as it is, never updating
// it: publishers other than StreamOwner may not change the stream, and one
// that differs from StreamConfig (an upgrade under way) is the owner's to
// update.
func OpenStream(ctx context.Context, js jetstream.JetStream) (jetstream.Stream, error) {
	s, err := js.Stream(ctx, StreamName)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		created, cerr := js.CreateStream(ctx, StreamConfig())
		if cerr == nil {
			return created, nil
		}
		if !errors.Is(cerr, jetstream.ErrStreamNameAlreadyInUse) {
			return nil, fmt.Errorf("create stream %s: %w", StreamName, cerr)
		}
		s, err = js.Stream(ctx, StreamName)
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", StreamName, err)
	}
	return s, nil
}

// sameStream compares the fields StreamConfig sets.
func sameStream(have, want jetstream.StreamConfig) bool {
	return have.Description == want.Description && slices.Equal(have.Subjects, want.Subjects) &&
		have.Storage == want.Storage && have.Retention == want.Retention &&
		have.MaxAge == want.MaxAge && have.Duplicates == want.Duplicates
}
