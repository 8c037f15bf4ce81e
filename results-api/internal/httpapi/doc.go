// Package httpapi is the results API's HTTP surface: routes.go lists every
// route, one file per resource holds its handlers, errors.go maps errors to
// status codes and JSON bodies, and middleware.go adds request ids, logging,
// metrics, body limits and bearer-token authentication for writes, and
// limits.go bounds what clients can make the server hold: per-route read
// and write deadlines, and byte-weighted memory budgets that uploads and
// large reads wait for (503 busy with Retry-After when they cannot get
// their share in time).
package httpapi
