package bus

import "testing"

func TestRedactKeepsSecretsOutOfErrors(t *testing.T) {
	for in, want := range map[string]string{
		"nats://operator:s3cret@nats:4222": "nats://nats:4222",
		"nats://token@nats:4222":           "nats://nats:4222",
		"nats://nats:4222":                 "nats://nats:4222",
		"://bad":                           "(unparsable NATS URL)",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}
