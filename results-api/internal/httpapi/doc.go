// Package httpapi is the results API's HTTP surface: routes.go lists every
// route, one file per resource holds its handlers, errors.go maps errors to
// status codes and JSON bodies, and middleware.go adds request ids, logging,
// metrics, body limits and bearer-token authentication for writes.
package httpapi
