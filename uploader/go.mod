module github.com/crowsnest-dev/crowsnest/uploader

// Local modules (replaced below):
//   api          shared contracts: scan exit codes and paths
//   results-api  TESTS ONLY: uploads go to a real results-api (apitest)
//   test/support TESTS ONLY: throwaway Postgres behind that results-api

go 1.26.0

require (
	github.com/crowsnest-dev/crowsnest/api v0.0.0
	github.com/crowsnest-dev/crowsnest/results-api v0.0.0
	github.com/crowsnest-dev/crowsnest/test/support v0.0.0
)

require github.com/kr/text v0.2.0 // indirect

require (
	github.com/CycloneDX/cyclonedx-go v0.12.0 // indirect
	github.com/apapsch/go-jsonmerge/v2 v2.0.0 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/coder/websocket v1.8.15 // indirect
	github.com/go-chi/chi/v5 v5.5.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.12.0 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/jinzhu/inflection v1.0.0 // indirect
	github.com/jinzhu/now v1.1.5 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/mfridman/interpolate v0.0.2 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/nats-io/nats.go v1.55.0 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	github.com/oapi-codegen/runtime v1.8.0 // indirect
	github.com/pressly/goose/v3 v3.29.0 // indirect
	github.com/prometheus/client_golang v1.23.2 // indirect
	github.com/prometheus/client_model v0.6.2 // indirect
	github.com/prometheus/common v0.67.5 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/sethvargo/go-retry v0.5.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.yaml.in/yaml/v2 v2.4.3 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	gorm.io/driver/postgres v1.6.3 // indirect
	gorm.io/gorm v1.31.2 // indirect
)

// Test-only: the uploader's tests run a real results-api (apitest) on a real
// Postgres (pgtest). The binary itself imports only the standard library.
replace (
	github.com/crowsnest-dev/crowsnest/api => ../api
	github.com/crowsnest-dev/crowsnest/results-api => ../results-api
	github.com/crowsnest-dev/crowsnest/test/support => ../test/support
)
