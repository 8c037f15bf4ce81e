// Package receiver renders sealed groups for Alertmanager (v2 API), Slack
// (incoming webhook, Block Kit) and generic webhooks (CloudEvents HTTP
// binding, optionally HMAC-signed), and delivers them: one bounded queue
// and one worker per receiver, a rate limit, retries with exponential
// backoff on 5xx, 429, timeouts and connection errors, and a dead-letter
// count for what cannot be delivered. A slow receiver holds up only its
// own queue.
package receiver
