package receiver

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestVerifyAgainstAttacker plays an attacker against the signature: no
// header, a forged or truncated MAC, the right MAC with another key, a
// tampered body, a replay outside the tolerance, a signature from the
// future, a moved timestamp. Each is refused; only the genuine request
// passes.
func TestVerifyAgainstAttacker(t *testing.T) {
	key := []byte("s3cret-key")
	body := []byte(`{"id":"g1","data":{"route":"a"}}`)
	now := time.Unix(1_800_000_000, 0)
	good := Sign(key, now, body)
	if err := Verify(key, good, body, now.Add(10*time.Second), time.Minute); err != nil {
		t.Fatalf("genuine request refused: %v", err)
	}
	_, mac, _ := strings.Cut(good, ",v1=")
	for name, tc := range map[string]struct {
		header string
		body   []byte
		at     time.Time
	}{
		"no header":        {"", body, now},
		"garbage":          {"sha256=abc", body, now},
		"forged mac":       {"t=1800000000,v1=" + strings.Repeat("0", 64), body, now},
		"truncated mac":    {good[:len(good)-2], body, now},
		"other key":        {Sign([]byte("guess"), now, body), body, now},
		"tampered body":    {good, []byte(`{"id":"g1","data":{"route":"b"}}`), now},
		"replayed later":   {good, body, now.Add(10 * time.Minute)},
		"from the future":  {Sign(key, now.Add(10*time.Minute), body), body, now},
		"moved timestamp":  {"t=1800000100,v1=" + mac, body, now},
		"missing mac part": {"t=1800000000", body, now},
	} {
		t.Run(name, func(t *testing.T) {
			if err := Verify(key, tc.header, tc.body, tc.at, time.Minute); !errors.Is(err, ErrSignature) {
				t.Fatalf("accepted (err %v)", err)
			}
		})
	}
}
