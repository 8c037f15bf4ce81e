package stack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
		Listen: fmt.Sprintf("127.0.0.1:%d", port), AdminToken: s.WriteToken,
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
	if o.UploadToken == "serviceaccount" {
		m.ResultsAPIURL, m.TokenFile = s.URL(), filepath.Join(dir, "results-api-token")
		if err := s.matcherToken(ctx, m.TokenFile); err != nil {
			return err
		}
		s.goRun(bg, "matcher token", func(ctx context.Context) error {
			t := time.NewTicker(20 * time.Minute) // tokens last an hour
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return nil
				case <-t.C:
					if err := s.matcherToken(ctx, m.TokenFile); err != nil && ctx.Err() == nil {
						s.Log.Warn("refresh the matcher's token", "error", err)
					}
				}
			}
		})
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
func (s *Stack) UpdateDB(ctx context.Context) error {
	dir, err := os.MkdirTemp(filepath.Join(s.Options.StateDir, "matcher"), "db-update-")
	if err != nil {
		return err
	}
	archive, err := services.WriteDBArchive(ctx, s.Options.Bin.Vulndb, dir, time.Now(), nil)
	if err != nil {
		return err
	}
	s.Log.Info("importing a newer Grype DB into the matcher", "archive", filepath.Base(archive))
	return s.Matcher.Import(ctx, archive)
}

// matcherToken writes a fresh token of the matcher's ServiceAccount for
// results-api's audience (what the chart's projected volume holds),
// creating the namespace and ServiceAccount the first time.
func (s *Stack) matcherToken(ctx context.Context, file string) error {
	c := s.Cluster.Client
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: MatcherNamespace}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: MatcherServiceAccount, Namespace: MatcherNamespace}}
	if _, err := c.CoreV1().ServiceAccounts(MatcherNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	exp := int64(3600)
	tr, err := c.CoreV1().ServiceAccounts(MatcherNamespace).CreateToken(ctx, MatcherServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{TokenAudience}, ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token of %s/%s: %w", MatcherNamespace, MatcherServiceAccount, err)
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(tr.Status.Token), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}
