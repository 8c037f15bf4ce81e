// Package authn verifies write tokens with the Kubernetes TokenReview API:
// a scan Job's projected service-account token, issued for the audience
// crowsnest-results-api, may write when its service account is on the
// allowed list. It implements httpapi.Authenticator.
package authn
