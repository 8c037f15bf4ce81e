// Package resultsapitest runs the real results-api binary for other
// components' tests, as users meet it: a child process serving HTTP on
// 127.0.0.1, on a fresh Postgres database from pgtest, with a random admin
// token. Callers' TestMain must run pgtest.Main.
//
//	srv := resultsapitest.Start(t, resultsapitest.WithNATS(url))
//	// PUT srv.URL+"/api/v1/reports/sha256:..." with "Bearer "+srv.Token
//	srv.Close()   // the process stops: its address refuses connections
//	srv.Restart() // a new process on the same address and database
//
// The binary is built once per test process from the checkout
// (results-api/cmd/results-api, as `make build-results-api` builds it), or
// taken from CROWSNEST_RESULTS_API_BIN. Its logs go to the test log when the
// test fails. It dies with the test process (Pdeathsig), so a test binary
// killed by `go test -timeout` leaves no server behind.
//
// results-api's own tests use an in-process harness instead
// (results-api/internal/apitest); this package imports nothing of results-api, so a
// module that uses it does not require results-api's module.
package resultsapitest
