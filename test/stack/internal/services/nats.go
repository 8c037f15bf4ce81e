package services

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/proc"
)

// NATS is a nats-server process with JetStream and a file store; it can be
// restarted on the same port and store. It admits only the Crowsnest users
// of the shared contract (eventsv1.Permissions), each with a generated
// password kept in a file under LogDir, as the chart's bundled NATS does.
type NATS struct {
	Binary, StoreDir, LogDir string
	Port, MonitorPort        int

	passwords map[eventsv1.User]string
	p         *proc.Process
}

// PasswordFile is the file holding u's password (what a binary's
// --nats-password-file names).
func (n *NATS) PasswordFile(u eventsv1.User) string {
	return filepath.Join(n.LogDir, "nats-"+string(u)+".password")
}

// Password is u's password.
func (n *NATS) Password(u eventsv1.User) string { return n.passwords[u] }

// writeConfig generates the passwords (once: a restart keeps them), their
// files, and the server's configuration file.
func (n *NATS) writeConfig() (string, error) {
	if n.passwords == nil {
		n.passwords = map[eventsv1.User]string{}
		for _, u := range eventsv1.Users() {
			b := make([]byte, 18)
			if _, err := rand.Read(b); err != nil {
				return "", err
			}
			n.passwords[u] = hex.EncodeToString(b)
			if err := os.WriteFile(n.PasswordFile(u), []byte(n.passwords[u]), 0o600); err != nil {
				return "", fmt.Errorf("write nats password: %w", err)
			}
		}
	}
	auth, err := eventsv1.ServerAuthorization(n.passwords)
	if err != nil {
		return "", err
	}
	// The file-store limit is set, as the chart's nats.jetstream.maxFileStore
	// (1Gi): left unset, the server takes 75% of the disk space free at
	// start, and the notifier's 256 MiB state bucket is refused with
	// "insufficient storage resources" on a nearly full disk.
	auth += fmt.Sprintf("\njetstream {\n  store_dir: %q\n  max_file_store: %d\n}\n", n.StoreDir, 1<<30)
	conf := filepath.Join(n.LogDir, "nats.conf")
	if err := os.WriteFile(conf, []byte(auth), 0o600); err != nil {
		return "", fmt.Errorf("write nats config: %w", err)
	}
	return conf, nil
}

// URL is the client URL.
func (n *NATS) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(n.Port) }

// Start runs the server (again) and waits until it is healthy.
func (n *NATS) Start(ctx context.Context) error {
	var err error
	if n.Port == 0 {
		if n.Port, err = proc.FreePort(); err != nil {
			return err
		}
		if n.MonitorPort, err = proc.FreePort(); err != nil {
			return err
		}
	}
	conf, err := n.writeConfig()
	if err != nil {
		return err
	}
	n.p, err = proc.Start(proc.Spec{Name: "nats-server", Binary: n.Binary, LogDir: n.LogDir, Args: []string{
		"--config=" + conf,
		"--addr=127.0.0.1", "--port=" + strconv.Itoa(n.Port),
		"--http_port=" + strconv.Itoa(n.MonitorPort),
	}})
	if err != nil {
		return err
	}
	health := proc.HTTPOK(fmt.Sprintf("http://127.0.0.1:%d/healthz?js-enabled-only=true", n.MonitorPort))
	return n.p.WaitReady(ctx, 20*time.Second, func(ctx context.Context) error {
		if err := proc.TCPOpen(net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Port)))(ctx); err != nil {
			return err
		}
		return health(ctx)
	})
}

// Stop ends the server; its store stays for a restart.
func (n *NATS) Stop() {
	if n.p != nil {
		_ = n.p.Stop(5 * time.Second)
	}
}
