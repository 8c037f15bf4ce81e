package events

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// inventoryConsumerConfig is the inventory consumer: the scan-status
// consumer's settings (unlimited deliveries, NAK with a growing delay,
// invalid events terminated) on crowsnest.inventory.snapshot.
func (b *Bus) inventoryConsumerConfig() jetstream.ConsumerConfig {
	c := b.consumerConfig()
	c.Durable = InventoryDurable
	c.Description = "results-api workload inventory from the operator's snapshots"
	c.FilterSubjects = []string{eventsv1.SubjectInventorySnapshot}
	return c
}

// inventory turns a validated inventory.snapshot event into the store's
// Inventory.
func inventory(ev eventsv1.Event) (store.Inventory, error) {
	var p eventsv1.InventorySnapshot
	if err := ev.Decode(&p); err != nil {
		return store.Inventory{}, err
	}
	inv := store.Inventory{Namespace: p.Namespace, Labels: p.Labels, Truncated: p.Truncated, EventID: ev.ID, Time: ev.Time.UTC()}
	for _, w := range p.Workloads {
		for _, c := range w.Containers {
			inv.Entries = append(inv.Entries, store.InventoryEntry{Kind: w.Kind, Name: w.Name, Container: c.Name,
				Digest: c.Digest, Image: c.Image, Init: c.Init, Pods: c.Pods})
		}
	}
	return inv, nil
}

// handleInventory applies one namespace's snapshot: an older or
// redelivered one is acknowledged without effect (the store compares event
// times), a failed apply is NAKed and redelivered.
func (b *Bus) handleInventory(ctx context.Context, m jetstream.Msg) {
	inv, _, applied := applyEvent(ctx, b, m, inventory, "apply inventory",
		func(inv store.Inventory) []any { return []any{"namespace", inv.Namespace} }, b.o.Store.ApplyInventory)
	if applied && b.o.OnInventory != nil {
		b.o.OnInventory(inv.Namespace)
	}
}
