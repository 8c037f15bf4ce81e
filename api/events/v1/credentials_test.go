package v1_test

import (
	"os"
	"path/filepath"
	"testing"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

func TestCredentialsOptions(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		c    eventsv1.Credentials
		opts int
		err  bool
	}{
		"none":                {eventsv1.Credentials{}, 0, false},
		"user and password":   {eventsv1.Credentials{User: "operator", PasswordFile: pw}, 1, false},
		"user alone":          {eventsv1.Credentials{User: "operator"}, 0, true},
		"password alone":      {eventsv1.Credentials{PasswordFile: pw}, 0, true},
		"empty password file": {eventsv1.Credentials{User: "operator", PasswordFile: empty}, 0, true},
		"missing password":    {eventsv1.Credentials{User: "operator", PasswordFile: filepath.Join(dir, "nope")}, 0, true},
		"missing creds file":  {eventsv1.Credentials{CredsFile: filepath.Join(dir, "nope.creds")}, 0, true},
		"bad nkey seed":       {eventsv1.Credentials{NKeyFile: pw}, 0, true},
		"two kinds at once":   {eventsv1.Credentials{User: "operator", PasswordFile: pw, CredsFile: pw}, 0, true},
	} {
		t.Run(name, func(t *testing.T) {
			opts, err := tc.c.Options()
			if (err != nil) != tc.err || len(opts) != tc.opts {
				t.Fatalf("Options() = %d options, %v; want %d options, error %v", len(opts), err, tc.opts, tc.err)
			}
		})
	}
}
