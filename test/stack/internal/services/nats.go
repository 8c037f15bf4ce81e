package services

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/proc"
)

// NATS is a nats-server process with JetStream and a file store; it can be
// restarted on the same port and store.
type NATS struct {
	Binary, StoreDir, LogDir string
	Port, MonitorPort        int

	p *proc.Process
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
	n.p, err = proc.Start(proc.Spec{Name: "nats-server", Binary: n.Binary, LogDir: n.LogDir, Args: []string{
		"--addr=127.0.0.1", "--port=" + strconv.Itoa(n.Port),
		"--http_port=" + strconv.Itoa(n.MonitorPort),
		"--jetstream", "--store_dir=" + n.StoreDir,
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
