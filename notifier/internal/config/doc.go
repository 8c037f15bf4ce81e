// Package config reads and checks the notifier's YAML configuration:
// receivers (Alertmanager, Slack, webhook) and the routes that send
// notifications to them. Secrets (webhook URLs, HMAC keys, bearer tokens)
// are read from files the configuration names, never written inline.
package config
