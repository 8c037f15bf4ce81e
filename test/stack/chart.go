package stack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

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

// startChartCluster makes the stack a cluster to install the chart into
// (Options.Chart): Postgres reachable from Pods (the chart's external
// database path, as production installs point it at CloudNativePG), the
// real node with every project image pushed, the default StorageClass and
// the offline Grype DB behind a mirror URL.
func (s *Stack) startChartCluster(ctx, bg context.Context) error {
	o := s.Options
	pg, err := services.StartPostgresForPods(ctx, s.Network.Gateway, s.Network.Subnet)
	if err != nil {
		return err
	}
	s.Postgres = pg
	s.closers = append(s.closers, func() { _ = pg.Stop() })
	if err := s.startNode(ctx, ChartImages); err != nil {
		return err
	}
	p := &storage.Provisioner{Client: s.Cluster.Client, Dir: filepath.Join(o.StateDir, "volumes"), Node: NodeName, Log: s.Log}
	if err := p.Install(ctx); err != nil {
		return err
	}
	s.goRun(bg, "storage provisioner", p.Run)
	return s.serveDBMirror(ctx)
}

// serveDBMirror writes the project's offline DB with its listing and
// serves the folder over HTTP on the gateway (the node's Pods reach it).
func (s *Stack) serveDBMirror(ctx context.Context) error {
	dir := filepath.Join(s.Options.StateDir, "dbmirror")
	if _, err := services.WriteDBArchive(ctx, s.Options.Bin.Vulndb, dir, time.Now().Add(-time.Hour), nil); err != nil {
		return fmt.Errorf("offline Grype DB: %w", err)
	}
	l, err := net.Listen("tcp", s.hostAddr(""))
	if err != nil {
		return fmt.Errorf("DB mirror: %w", err)
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir)), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.Log.Error("DB mirror stopped", "error", err)
		}
	}()
	s.closers = append(s.closers, func() { _ = srv.Close() })
	s.DBMirrorURL = "http://" + l.Addr().String()
	return nil
}
