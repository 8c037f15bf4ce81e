package services

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/proc"
)

// Matcher is the matcher process: the stack's one Grype DB, served to scan
// Pods (operator --vulndb-url) and re-matched into results-api when it
// changes.
type Matcher struct {
	Binary, LogDir, DataDir string
	Listen                  string // host:port
	// UpstreamURL is the listing to fetch from; "off" (offline) imports
	// Archive before the server starts instead.
	UpstreamURL string
	Archive     string
	// AdminToken is accepted for POST /api/v1/vulndb/import.
	AdminToken string
	// ResultsAPIURL and TokenFile (a token of the matcher's ServiceAccount
	// for results-api's audience, kept fresh by the caller) turn
	// re-matching on.
	ResultsAPIURL, TokenFile  string
	NATSURL, NATSPasswordFile string

	p *proc.Process
}

// URL is the matcher's base URL.
func (m *Matcher) URL() string { return "http://" + m.Listen }

// VulnDBURL is what scan Jobs get as GRYPE_DB_UPDATE_URL.
func (m *Matcher) VulnDBURL() string { return m.URL() + "/vulndb" }

// Start imports the offline archive (if any), runs `matcher serve` and
// waits until it serves a DB.
func (m *Matcher) Start(ctx context.Context) error {
	if m.Archive != "" {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if err := runTool(cctx, os.Environ(), m.Binary, "db", "import", "--data-dir="+m.DataDir, m.Archive); err != nil {
			return err
		}
	}
	tokenFile := filepath.Join(m.DataDir, "..", "matcher-admin-token")
	if err := os.WriteFile(tokenFile, []byte(m.AdminToken), 0o600); err != nil {
		return err
	}
	args := []string{"serve", "--listen=" + m.Listen, "--data-dir=" + m.DataDir, "--upstream-url=" + m.UpstreamURL,
		"--admin-token-file=" + tokenFile}
	if m.ResultsAPIURL != "" {
		args = append(args, "--results-api-url="+m.ResultsAPIURL, "--results-api-token-file="+m.TokenFile)
	}
	if m.NATSURL != "" {
		args = append(args, "--nats-url="+m.NATSURL, "--nats-user="+string(eventsv1.UserMatcher), "--nats-password-file="+m.NATSPasswordFile)
	}
	var err error
	m.p, err = proc.Start(proc.Spec{Name: "matcher", Binary: m.Binary, LogDir: m.LogDir, Args: args})
	if err != nil {
		return err
	}
	return m.p.WaitReady(ctx, 5*time.Minute, proc.HTTPOK(m.URL()+"/readyz"))
}

// Import uploads a DB archive the way an operator does in an air gap (POST
// /api/v1/vulndb/import with the admin token); the matcher then re-matches
// every stored report against it.
func (m *Matcher) Import(ctx context.Context, archive string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL()+"/api/v1/vulndb/import", f)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+m.AdminToken)
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("import %s: %w", filepath.Base(archive), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("import %s: %s: %s", filepath.Base(archive), resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// Stop ends the matcher gracefully.
func (m *Matcher) Stop() {
	if m.p != nil {
		_ = m.p.Stop(20 * time.Second)
	}
}

// WriteDBArchive writes the project's offline DB the way Grype distributes
// it (an archive and its listing) into dir with the vulndb tool: built at
// built, without the advisories in exclude. It returns the archive's path.
func WriteDBArchive(ctx context.Context, vulndb, dir string, built time.Time, exclude []string) (string, error) {
	args := []string{"--out", filepath.Join(dir, "db"), "--upstream", dir, "--built", built.UTC().Format(time.RFC3339)}
	if len(exclude) > 0 {
		args = append(args, "--exclude", strings.Join(exclude, ","))
	}
	if err := runTool(ctx, os.Environ(), vulndb, args...); err != nil {
		return "", err
	}
	matches, err := filepath.Glob(filepath.Join(dir, "v6", "vulnerability-db_*.tar.*"))
	if err != nil {
		return "", err
	}
	if len(matches) != 1 {
		return "", fmt.Errorf("vulndb wrote %d archives into %s/v6, want one", len(matches), dir)
	}
	return matches[0], nil
}
