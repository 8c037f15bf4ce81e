// Package authn decides whether a bearer token may write, and defines the
// sentinel errors that say why not (the HTTP layer maps them to 403 or 503).
//
// TokenReviewer verifies tokens with the Kubernetes TokenReview API: a scan
// Job's projected service-account token, issued for the audience
// crowsnest-results-api, may write when its service account is on the
// allowed list. StaticToken allows one configured token; DenyWrites, the
// default, allows none. All three implement httpapi.Authenticator.
package authn
