// Package vulnmetrics exports the fleet's vulnerability metrics
// (crowsnest_vulnerabilities, crowsnest_namespace_vulnerabilities,
// crowsnest_images, crowsnest_vulnerability_top, crowsnest_findings_new_7d
// and the refresh's own) computed from the store on a schedule, not per
// scrape: a Refresher recomputes them every interval and soon after a
// local change (Trigger), and a Collector serves the last snapshot.
//
// A scrape never waits for Postgres and never sees a half-built set: each
// refresh builds every sample first and then swaps one pointer. A failed
// refresh (Postgres down) keeps the previous snapshot and counts an error.
//
// Every replica computes the same fleet-wide numbers from the shared
// database: aggregate them across replicas with max, not sum.
package vulnmetrics
