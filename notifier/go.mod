module github.com/crowsnest-dev/crowsnest/notifier

// The notifier consumes Crowsnest's public events (api/events/v1) from NATS
// JetStream and tells Alertmanager, Slack and webhooks. It knows nothing
// else: no database, no results-api internals.
//
// Crowsnest modules (replaced with their directories):
//   api          shared contracts: events, NATS users and permissions
//   test/support TESTS ONLY: embedded JetStream with the contract's users

go 1.26.0

replace github.com/crowsnest-dev/crowsnest/test/support => ../test/support

replace github.com/crowsnest-dev/crowsnest/api => ../api

require (
	github.com/crowsnest-dev/crowsnest/api v0.0.0
	github.com/crowsnest-dev/crowsnest/test/support v0.0.0-00010101000000-000000000000
	github.com/nats-io/nats.go v1.55.0
	github.com/prometheus/client_golang v1.25.0
	k8s.io/apimachinery v0.36.3
	sigs.k8s.io/yaml v1.6.0
)

require (
	github.com/antithesishq/antithesis-sdk-go v0.8.0-default-no-op // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/google/go-tpm v0.9.8 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/minio/highwayhash v1.0.4 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/nats-io/jwt/v2 v2.8.2 // indirect
	github.com/nats-io/nats-server/v2 v2.15.2 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/time v0.16.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
	k8s.io/utils v0.0.0-20260210185600-b8788abfbbc2 // indirect
)
