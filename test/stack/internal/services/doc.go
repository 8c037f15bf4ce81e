// Package services starts Crowsnest's own processes and their backends for
// the stack, each with the flags a user would set: nats-server with
// JetStream, a throwaway Postgres, results-api, and the operator; and
// prepares Grype's vulnerability DB offline.
package services
