// Package bench holds the results API's Go benchmarks (in _test.go files):
// ingest through the real HTTP handler on a real Postgres, batch lookup,
// list and vulnerability queries on seeded databases, WebSocket fan-out
// to 1,000 real clients over loopback, and the resident memory of the
// results-api binary (a child process, as the chart configures it) under
// concurrent 32 MiB uploads and 200 downloaders. Run them with
// `make bench-results-api`; the numbers are recorded in docs/benchmarks.md.
// Benchmarks report p99 latencies and throughput with b.ReportMetric; no
// test asserts a timing.
//
// With CROWSNEST_BENCH_SMOKE set (CI: -benchtime 1x), the seeded data sets
// and the client count shrink so that every benchmark runs, with all its
// correctness checks, in seconds.
package bench
