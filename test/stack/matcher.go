package stack

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/services"
)

// The matcher's identity in the stack's control plane, as the chart names
// it: results-api accepts re-matched reports from this ServiceAccount only
// (--rematch-service-accounts).
const (
	MatcherNamespace      = "crowsnest-system"
	MatcherServiceAccount = "crowsnest-matcher"
)

// DemoAdvisories are real advisories the offline DB holds back when
// Options.HoldBackAdvisories is set, and the DB of UpdateDB publishes: two
// criticals in the demo images' OpenSSL and minimist, "published" while the
// stack runs.
var DemoAdvisories = []string{"CVE-2024-5535", "CVE-2021-44906"}

// startMatcher runs the matcher with the offline DB (or Grype's published
// one), re-matching into results-api when scan Pods authenticate with
// service-account tokens (tokenreview mode, where the rematch scope exists).
func (s *Stack) startMatcher(ctx, bg context.Context) error {
	o := s.Options
	dir := filepath.Join(o.StateDir, "matcher")
	port, err := freePort()
	if err != nil {
		return err
	}
	m := &services.Matcher{Binary: o.Bin.Matcher, LogDir: o.StateDir, DataDir: filepath.Join(dir, "data"),
		Listen: net.JoinHostPort(s.HostIP(), strconv.Itoa(port)), AdminToken: s.WriteToken,
		NATSURL: s.NATS.URL(), NATSPasswordFile: s.NATS.PasswordFile(eventsv1.UserMatcher)}
	if err := os.MkdirAll(m.DataDir, 0o700); err != nil {
		return err
	}
	if !o.OnlineDB {
		m.UpstreamURL = "off"
		var hold []string
		if o.HoldBackAdvisories {
			hold = DemoAdvisories
		}
		s.Log.Info("writing the offline Grype DB", "held back", hold)
		if m.Archive, err = services.WriteDBArchive(ctx, o.Bin.Vulndb, filepath.Join(dir, "db-1"), time.Now().Add(-time.Hour), hold); err != nil {
			return err
		}
	}
	// The matcher's token is the one a kubelet mounts into the chart's
	// matcher Pod: projected, Pod-bound, refreshed by the kubelet. A Pod of
	// the matcher's ServiceAccount on the real node holds it; the matcher
	// process reads it from the kubelet's volume.
	m.ResultsAPIURL = s.URL()
	if m.TokenFile, err = s.identityPod(ctx, MatcherNamespace, MatcherServiceAccount, "crowsnest-matcher"); err != nil {
		return err
	}
	if err := m.Start(ctx); err != nil {
		return err
	}
	s.Matcher = m
	s.closers = append(s.closers, m.Stop)
	if !o.OnlineDB && o.DBUpdateAfter > 0 {
		s.goRun(bg, "DB update", func(ctx context.Context) error {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(o.DBUpdateAfter):
			}
			if err := s.UpdateDB(ctx); err != nil && ctx.Err() == nil {
				s.Log.Error("DB update", "error", err)
			}
			return nil
		})
	}
	return nil
}

// UpdateDB writes a newer offline DB with every advisory (DemoAdvisories
// included) and imports it into the running matcher through its admin API;
// the matcher then re-matches every stored report.
func (s *Stack) UpdateDB(ctx context.Context) error { return s.ImportDB(ctx, nil) }

// ImportDB writes a newer offline DB without the advisories in exclude (ids
// or CVE aliases) and imports it into the running matcher through its admin
// API; the matcher then re-matches every stored report.
func (s *Stack) ImportDB(ctx context.Context, exclude []string) error {
	dir, err := os.MkdirTemp(filepath.Join(s.Options.StateDir, "matcher"), "db-update-")
	if err != nil {
		return err
	}
	archive, err := services.WriteDBArchive(ctx, s.Options.Bin.Vulndb, dir, time.Now(), exclude)
	if err != nil {
		return err
	}
	s.Log.Info("importing a newer Grype DB into the matcher", "archive", filepath.Base(archive), "without", exclude)
	return s.Matcher.Import(ctx, archive)
}
