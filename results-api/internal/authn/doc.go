// Package authn decides whether a bearer token may write, and defines the
// sentinel errors that say why not (the HTTP layer maps them to 403 or 503).
//
// TokenReviewer verifies tokens with the Kubernetes TokenReview API: a scan
// Job's projected service-account token, issued for the audience
// crowsnest-results-api, may write when its service account is on the
// allowed list. StaticToken allows one configured token; DenyWrites, the
// default, allows none. All three implement httpapi.Authenticator.
//
// IssuerKeys verifies a token's signature and claims locally, against the
// keys the API server publishes for service-account tokens (its OIDC
// discovery), so that a TokenReviewer sends only tokens the cluster signed
// to TokenReview: forged tokens cost their sender, not the API server and
// not the valid tokens waiting behind them.
package authn
