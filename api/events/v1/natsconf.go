package v1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// ServerAuthorization renders the `authorization` block of a nats-server
// configuration file that gives each user in passwords its Permissions and
// admits no one else (no anonymous user). The local stack and the tests use
// it; the chart renders the same lists from a file generated from this
// package, so every deployment grants the same subjects.
func ServerAuthorization(passwords map[User]string) (string, error) {
	var b strings.Builder
	b.WriteString("authorization {\n  users = [\n")
	for _, u := range Users() {
		pw, ok := passwords[u]
		if !ok {
			continue
		}
		if pw == "" {
			return "", fmt.Errorf("nats user %s: empty password", u)
		}
		p := Permissions(u)
		entry := map[string]any{
			"user":     string(u),
			"password": pw,
			"permissions": map[string]any{
				"publish":   map[string]any{"allow": p.PublishAllow, "deny": p.PublishDeny},
				"subscribe": map[string]any{"allow": p.SubscribeAllow},
			},
		}
		// nats-server's configuration format accepts JSON values, but not
		// \u escapes: no HTML escaping of '>' in wildcards.
		var j bytes.Buffer
		enc := json.NewEncoder(&j)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(entry); err != nil {
			return "", fmt.Errorf("render nats user %s: %w", u, err)
		}
		b.WriteString("    ")
		b.Write(j.Bytes())
	}
	b.WriteString("  ]\n}\n")
	return b.String(), nil
}
