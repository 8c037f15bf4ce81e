module github.com/crowsnest-dev/crowsnest/api

// The shared contracts of every Crowsnest component: events/v1 (NATS
// subjects, CloudEvents envelope, payloads, stream settings), scan (the
// scan Job's exit codes, paths, token audience, labels) and finding (what a
// finding of a CycloneDX report is, and its fingerprint). Owned by no single
// component; kept dependency-light on purpose (only nats.go, for the stream
// settings, and cyclonedx-go, for the report format).

go 1.26.0

require (
	github.com/CycloneDX/cyclonedx-go v0.12.0
	github.com/nats-io/nats.go v1.55.0
)

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
