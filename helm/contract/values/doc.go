// Package values describes the umbrella chart's values.yaml as Go types. It
// is the source of helm/crowsnest/values.schema.json (cmd/chartschema), and
// the chart tests decode values.yaml into it strictly, so the schema, the
// defaults and the templates cannot drift apart silently.
package values
