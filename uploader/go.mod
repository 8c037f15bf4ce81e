module github.com/crowsnest-dev/crowsnest/uploader

// Local modules (replaced below):
//   api          shared contracts: scan exit codes and paths
//   test/support TESTS ONLY: uploads go to results-api's binary
//                (resultsapitest) on a throwaway Postgres
// github.com/google/go-containerregistry is TESTS ONLY too: private
// registries the merged Docker config must pull from (dockerconfig).
// github.com/klauspost/compress: the report's zstd frame (what
// results-api stores as it came).

go 1.26.0

require (
	github.com/crowsnest-dev/crowsnest/api v0.0.0
	github.com/crowsnest-dev/crowsnest/test/support v0.0.0
	github.com/google/go-containerregistry v0.22.1
	github.com/klauspost/compress v1.20.3
)

require (
	github.com/docker/cli v29.9.2+incompatible // indirect
	github.com/docker/docker-credential-helpers v0.9.10 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.12.0 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
	github.com/sirupsen/logrus v1.10.2 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	gotest.tools/v3 v3.5.2 // indirect
)

// Test-only: the uploader's tests run results-api's binary (resultsapitest)
// on a real Postgres (pgtest). The binary itself imports only the standard
// library.
replace (
	github.com/crowsnest-dev/crowsnest/api => ../api
	github.com/crowsnest-dev/crowsnest/test/support => ../test/support
)
