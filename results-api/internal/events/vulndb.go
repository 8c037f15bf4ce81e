package events

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// VulnDBDurable is the name of the consumer of the matcher's DB
// announcements shared by all replicas (crowsnest.vulndb.updated).
const VulnDBDurable = eventsv1.ConsumerResultsAPIVulnDB

// vulnDBConsumerConfig is the DB-announcement consumer: the scan-status
// consumer's settings on crowsnest.vulndb.updated. Durable, so that an
// announcement made while results-api was away is delivered when it is
// back, and a first start reads the ones the stream still holds.
func (b *Bus) vulnDBConsumerConfig() jetstream.ConsumerConfig {
	c := b.consumerConfig()
	c.Durable = VulnDBDurable
	c.Description = "results-api served vulnerability DB from the matcher's announcements"
	c.FilterSubjects = []string{eventsv1.SubjectVulnDBUpdated}
	return c
}

// servedDB turns a validated vulndb.updated event into the store's
// ServedDB.
func servedDB(ev eventsv1.Event) (store.ServedDB, error) {
	var p eventsv1.VulnDBUpdated
	if err := ev.Decode(&p); err != nil {
		return store.ServedDB{}, err
	}
	return store.ServedDB{Built: p.Built.UTC(), Schema: p.Schema, Checksum: p.Checksum, Source: p.Source,
		GrypeVersion: p.GrypeVersion, EventID: ev.ID, AnnouncedAt: ev.Time.UTC()}, nil
}

// handleVulnDB records the served DB: an older or redelivered announcement
// is acknowledged without effect (the store compares event times), a
// failed write is NAKed and redelivered.
func (b *Bus) handleVulnDB(ctx context.Context, m jetstream.Msg) {
	db, ev, recorded := applyEvent(ctx, b, m, servedDB, "record served vulndb",
		func(db store.ServedDB) []any { return []any{"db_built", db.Built} }, b.o.Store.RecordServedDB)
	if recorded {
		b.o.Logger.Info("served vulndb recorded", "db_built", db.Built, "db_schema", db.Schema, "id", clipID(ev.ID))
	}
}
