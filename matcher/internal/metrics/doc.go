// Package metrics holds the matcher's Prometheus metrics in a private
// registry: crowsnest_vulndb_built_timestamp_seconds and
// crowsnest_vulndb_age_seconds (computed from the active DB at scrape time,
// absent while there is none), crowsnest_vulndb_fetch_total{result}, the re-match pass's
// crowsnest_rematch_reports_total{result}, crowsnest_rematch_pass_seconds,
// crowsnest_rematch_in_progress and
// crowsnest_rematch_last_pass_timestamp_seconds (Metrics implements
// rematch.Metrics), the event publisher's
// crowsnest_events_publish_failures_total{subject}, crowsnest_events_pending
// and crowsnest_events_dropped_total, and the Go and process collectors.
package metrics
