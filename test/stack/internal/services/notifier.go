package services

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/proc"
)

// Notifier is the notifier process, sending every notification at or above
// high severity to the stack's webhook Sink.
type Notifier struct {
	Binary, LogDir, StateDir  string
	NATSURL, NATSPasswordFile string
	DashboardURL              string
	Sink                      *Sink

	listen string
	p      *proc.Process
}

// Start writes the configuration, runs the notifier and waits until it
// consumes.
func (n *Notifier) Start(ctx context.Context) error {
	port, err := proc.FreePort()
	if err != nil {
		return err
	}
	n.listen = fmt.Sprintf("127.0.0.1:%d", port)
	config := fmt.Sprintf(`receivers:
- name: stack-webhook
  webhook:
    url: %s
routes:
- name: high-and-worse
  receiver: stack-webhook
  minSeverity: high
  groupWait: 2s
`, n.Sink.URL())
	file := filepath.Join(n.StateDir, "notifier.yaml")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		return err
	}
	args := []string{"--config=" + file, "--listen=" + n.listen, "--dashboard-url=" + n.DashboardURL, "--nats-url=" + n.NATSURL,
		"--nats-user=" + string(eventsv1.UserNotifier), "--nats-password-file=" + n.NATSPasswordFile, "--retry-min-backoff=200ms"}
	n.p, err = proc.Start(proc.Spec{Name: "notifier", Binary: n.Binary, LogDir: n.LogDir, Args: args})
	if err != nil {
		return err
	}
	return n.p.WaitReady(ctx, 60*time.Second, proc.HTTPOK("http://"+n.listen+"/readyz"))
}

// Stop ends the notifier gracefully.
func (n *Notifier) Stop() {
	if n.p != nil {
		_ = n.p.Stop(20 * time.Second)
	}
}

// Notification is one request the Sink received: the CloudEvents id (the
// notifier's group id) and the event's data.
type Notification struct {
	ID   string          `json:"id"`
	Data json.RawMessage `json:"data"`
}

// Sink is a CloudEvents webhook receiver on loopback that keeps what it
// receives: the notifier's receiver in the stack. GET / lists it as JSON.
type Sink struct {
	srv *http.Server
	ln  net.Listener

	mu       sync.Mutex
	received []Notification
}

// StartSink listens on a free loopback port.
func StartSink() (*Sink, error) { return StartSinkAt("127.0.0.1:0") }

// StartSinkAt listens on addr (host:port; port 0 picks a free one), e.g.
// the node network's gateway, where Pods on the real node reach it.
func StartSinkAt(addr string) (*Sink, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("webhook sink: %w", err)
	}
	s := &Sink{ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /notify", s.receive)
	mux.HandleFunc("GET /", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.Received())
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *Sink) receive(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var ev eventsv1.Event // structured mode: the CloudEvents envelope
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID == "" {
		http.Error(w, "not a structured CloudEvent", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.received = append(s.received, Notification{ID: ev.ID, Data: ev.Data})
	s.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

// URL is where the notifier posts.
func (s *Sink) URL() string { return "http://" + s.ln.Addr().String() + "/notify" }

// Address is the sink's base URL (GET lists what it received).
func (s *Sink) Address() string { return "http://" + s.ln.Addr().String() + "/" }

// Received returns a copy of everything received so far, in order.
func (s *Sink) Received() []Notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Notification(nil), s.received...)
}

// Close stops the sink.
func (s *Sink) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}
