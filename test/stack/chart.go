package stack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/proxy"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/registry"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/services"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/storage"
)

// ChartImages are the images a chart install pulls from the stack's
// registry (dist/images/<name>, pushed as crowsnest-<name>:<its version>):
// the six of make images and the bundled NATS.
var ChartImages = []string{"operator", "results-api", "uploader", "matcher", "notifier", "grype", "nats"}

// ImageRegistry is the chart's global.imageRegistry for this stack: every
// image is pulled as <ImageRegistry>/crowsnest-<name>:<tag>.
func (s *Stack) ImageRegistry() string { return s.Registry.Host + "/crowsnest" }

// NetworkPolicyPorts are the chart's global.networkPolicy port lists for
// this stack's cluster: apiServer (apiServerPorts) adds kube-apiserver's own
// port to the chart's defaults, scanEgress (scanEgressPorts) adds the
// registry's to 443. The enforcer (kube-router) judges the port a Pod
// connects to after the kubernetes Service's translation, so without them
// the components cannot list RBAC or Pods and scan Pods cannot pull. Both the
// chart suite's helm install and the Tilt dev values use them.
func (s *Stack) NetworkPolicyPorts() (apiServer, scanEgress []int, err error) {
	api, err := portOf(s.Cluster.Config.Host)
	if err != nil {
		return nil, nil, fmt.Errorf("kube-apiserver port: %w", err)
	}
	reg, err := portOf("http://" + s.Registry.Host)
	if err != nil {
		return nil, nil, fmt.Errorf("registry port: %w", err)
	}
	return []int{443, 6443, api}, []int{443, reg}, nil
}

func portOf(rawURL string) (int, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0, err
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		return 0, fmt.Errorf("no port in %q", rawURL)
	}
	return p, nil
}

// startChartCluster makes the stack a cluster to install the chart into
// (Options.Chart): Postgres reachable from Pods (the chart's external
// database path, as production installs point it at CloudNativePG), the
// real node with every project image pushed, the default StorageClass and
// the offline Grype DB behind a mirror URL; then the Tilt dev loop's
// files (dev.go).
func (s *Stack) startChartCluster(ctx, bg context.Context) error {
	o := s.Options
	pg, err := services.StartPostgresForPods(ctx, s.Network.Gateway, s.Network.Subnet)
	if err != nil {
		return err
	}
	s.Postgres = pg
	s.closers = append(s.closers, func() { _ = pg.Stop() })
	if err := s.postgresOn5432(); err != nil {
		return err
	}
	if err := s.startNode(ctx, ChartImages); err != nil {
		return err
	}
	p := &storage.Provisioner{Client: s.Cluster.Client, Dir: filepath.Join(o.StateDir, "volumes"), Node: NodeName, Log: s.Log}
	if err := p.Install(ctx); err != nil {
		return err
	}
	s.goRun(bg, "storage provisioner", p.Run)
	if err := s.serveDBMirror(ctx); err != nil {
		return err
	}
	return s.writeDevFiles()
}

// postgresOn5432 makes Postgres.PodURL name port 5432 on the gateway, where a
// TCP forwarder passes connections on to the server's own port (which it
// shares with loopback, so it cannot be 5432 itself): the chart's
// NetworkPolicy opens 5432 for an external database, and an enforcer
// judges the port a Pod connects to.
func (s *Stack) postgresOn5432() error {
	u, err := url.Parse(s.Postgres.PodURL)
	if err != nil {
		return fmt.Errorf("postgres URL for Pods: %w", err)
	}
	fwd, err := proxy.Start(net.JoinHostPort(s.HostIP(), "5432"), []string{u.Host})
	if err != nil {
		return fmt.Errorf("postgres on the gateway's port 5432: %w", err)
	}
	s.closers = append(s.closers, fwd.Close)
	u.Host = fwd.Addr()
	s.Postgres.PodURL = u.String()
	return nil
}

// serveDBMirror writes the project's offline DB with its listing (without
// DemoAdvisories when Options.HoldBackAdvisories is set) and serves the
// folder over plain HTTP on the gateway's port 443 (the node's Pods reach
// it; the chart's NetworkPolicy lets the matcher reach its upstream on 443
// only).
func (s *Stack) serveDBMirror(ctx context.Context) error {
	var hold []string
	if s.Options.HoldBackAdvisories {
		hold = DemoAdvisories
	}
	if err := s.writeMirrorDB(ctx, time.Now().Add(-time.Hour), hold); err != nil {
		return err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(s.HostIP(), "443"))
	if err != nil {
		return fmt.Errorf("DB mirror: %w", err)
	}
	serve := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(path.Base(r.URL.Path), "vulnerability-db_") {
			s.mirrorDownloads.Add(1)
		}
		http.FileServer(http.Dir(*s.mirrorDir.Load())).ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: serve, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.Log.Error("DB mirror stopped", "error", err)
		}
	}()
	s.closers = append(s.closers, func() { _ = srv.Close() })
	s.DBMirrorURL = "http://" + l.Addr().String()
	return nil
}

// DBMirrorDownloads is how many archive requests the DB mirror answered:
// a matcher that keeps its DB on its volume does not fetch it again when
// its Pod restarts.
func (s *Stack) DBMirrorDownloads() int64 { return s.mirrorDownloads.Load() }

// PublishNewerDB writes a newer offline DB with every advisory
// (DemoAdvisories included) and serves it on the DB mirror in place of the
// first: the chart's matcher imports it at its next check of the listing
// (matcher.checkInterval), then re-matches every stored report.
func (s *Stack) PublishNewerDB(ctx context.Context) error {
	return s.writeMirrorDB(ctx, time.Now(), nil)
}

// writeMirrorDB writes a DB and its listing into a folder of its own and
// makes the mirror serve it (a listing never points at an archive that is
// not there yet).
func (s *Stack) writeMirrorDB(ctx context.Context, built time.Time, exclude []string) error {
	s.mirrorN++
	dir := filepath.Join(s.Options.StateDir, fmt.Sprintf("dbmirror-%d", s.mirrorN))
	if _, err := services.WriteDBArchive(ctx, s.Options.Bin.Vulndb, dir, built, exclude); err != nil {
		return fmt.Errorf("offline Grype DB: %w", err)
	}
	s.mirrorDir.Store(&dir)
	return nil
}

// PushRunnableAlpine pushes registry.RunnableAlpine (the Alpine demo
// image's packages, the node's pause program as its entrypoint) as
// <registry>/demo/alpine-<variant>:3.18: a workload the real node runs,
// with findings, and with a digest of its own per variant.
func (s *Stack) PushRunnableAlpine(ctx context.Context, variant string) (registry.Image, error) {
	b, err := registry.RunnableAlpine(variant, "pause", s.pauseBin)
	if err != nil {
		return registry.Image{}, err
	}
	return s.Registry.Push(ctx, b)
}
