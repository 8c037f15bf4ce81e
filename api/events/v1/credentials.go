package v1

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
)

// Credentials say how a component authenticates to NATS; every binary takes
// them as --nats-creds, --nats-user with --nats-password-file, or
// --nats-nkey-file (CROWSNEST_NATS_* in the environment). Secrets are read
// from files and never logged.
type Credentials struct {
	CredsFile    string // a .creds file (JWT + NKey seed), for operator-mode NATS
	User         string // user name, with PasswordFile
	PasswordFile string // file holding the user's password
	NKeyFile     string // file holding an NKey seed
}

// Options turns the credentials into nats.go connect options. No
// credentials at all is no option (an open NATS, for development only).
func (c Credentials) Options() ([]nats.Option, error) {
	var opts []nats.Option
	set := 0
	if c.CredsFile != "" {
		set++
		if _, err := os.Stat(c.CredsFile); err != nil {
			return nil, fmt.Errorf("nats creds: %w", err)
		}
		opts = append(opts, nats.UserCredentials(c.CredsFile))
	}
	if c.NKeyFile != "" {
		set++
		o, err := nats.NkeyOptionFromSeed(c.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("nats nkey seed: %w", err)
		}
		opts = append(opts, o)
	}
	if c.User != "" || c.PasswordFile != "" {
		set++
		if c.User == "" || c.PasswordFile == "" {
			return nil, errors.New("nats: --nats-user and --nats-password-file go together")
		}
		b, err := os.ReadFile(c.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("nats password: %w", err)
		}
		pw := strings.TrimSpace(string(b))
		if pw == "" {
			return nil, fmt.Errorf("nats password file %s is empty", c.PasswordFile)
		}
		opts = append(opts, nats.UserInfo(c.User, pw))
	}
	if set > 1 {
		return nil, errors.New("nats: give one of --nats-creds, --nats-nkey-file, or --nats-user with --nats-password-file")
	}
	return opts, nil
}

// Set reports whether any credential is configured.
func (c Credentials) Set() bool {
	return c.CredsFile != "" || c.User != "" || c.PasswordFile != "" || c.NKeyFile != ""
}
