package services

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/proc"
)

// ResultsAPI is a results-api process; Stop and Start again keep its
// address and database.
type ResultsAPI struct {
	Name                     string // process and log name (default results-api)
	Binary, LogDir, StateDir string
	Listen                   string // host:port
	DatabaseURL, NATSURL     string
	NATSPasswordFile         string // results-api's NATS password (user results-api)
	WriteToken               string
	// ReadAuth is --read-auth: kubernetes or open (the default here).
	ReadAuth string
	// ExtraArgs are appended to the flags (e.g. TokenReview settings).
	ExtraArgs []string

	p *proc.Process
}

// URL is the base URL (dashboard at /).
func (r *ResultsAPI) URL() string { return "http://" + r.Listen }

// Start runs results-api and waits for /readyz.
func (r *ResultsAPI) Start(ctx context.Context) error {
	dbFile := filepath.Join(r.StateDir, "database-url")
	tokenFile := filepath.Join(r.StateDir, "write-token")
	if err := os.WriteFile(dbFile, []byte(r.DatabaseURL), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(tokenFile, []byte(r.WriteToken), 0o600); err != nil {
		return err
	}
	readAuth := r.ReadAuth
	if readAuth == "" {
		readAuth = "open"
	}
	args := []string{"--listen=" + r.Listen, "--database-url-file=" + dbFile, "--write-token-file=" + tokenFile, "--read-auth=" + readAuth}
	if r.NATSURL != "" {
		args = append(args, "--nats-url="+r.NATSURL, "--nats-user="+string(eventsv1.UserResultsAPI), "--nats-password-file="+r.NATSPasswordFile)
	}
	var err error
	name := r.Name
	if name == "" {
		name = "results-api"
	}
	r.p, err = proc.Start(proc.Spec{Name: name, Binary: r.Binary, LogDir: r.LogDir, Args: append(args, r.ExtraArgs...)})
	if err != nil {
		return err
	}
	return r.p.WaitReady(ctx, 60*time.Second, proc.HTTPOK(r.URL()+"/readyz"))
}

// Kill ends results-api at once (SIGKILL), like a crash or a lost node;
// Start brings it back on the same address.
func (r *ResultsAPI) Kill() {
	if r.p != nil {
		r.p.Kill()
	}
}

// Stop ends results-api gracefully.
func (r *ResultsAPI) Stop() {
	if r.p != nil {
		_ = r.p.Stop(20 * time.Second)
	}
}

// Operator is an operator process.
type Operator struct {
	Binary, LogDir, Kubeconfig string
	ResultsAPIURL, NATSURL     string
	// UploaderAPIURL is results-api's address for scan Pods (empty: ResultsAPIURL).
	UploaderAPIURL            string
	NATSPasswordFile          string // the operator's NATS password (user operator)
	UploaderImage, GrypeImage string
	RetryBackoff, JobTTL      time.Duration
	MetricsPort, ProbePort    int
	// TokenFile holds the token the lookup sends (--results-api-token-file).
	TokenFile string
	ExtraArgs []string

	p *proc.Process
}

// Start runs the operator and waits for /readyz.
func (o *Operator) Start(ctx context.Context) error {
	var err error
	for _, port := range []*int{&o.MetricsPort, &o.ProbePort} {
		if *port == 0 {
			if *port, err = proc.FreePort(); err != nil {
				return err
			}
		}
	}
	args := []string{
		"--results-api-url=" + o.ResultsAPIURL,
		"--uploader-image=" + o.UploaderImage,
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(o.MetricsPort),
		"--metrics-secure=false", // loopback only; the chart serves them with authn/authz
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(o.ProbePort),
		"--log-format=json",
	}
	if o.UploaderAPIURL != "" {
		args = append(args, "--uploader-api-url="+o.UploaderAPIURL)
	}
	if o.GrypeImage != "" {
		args = append(args, "--grype-image="+o.GrypeImage)
	}
	if o.TokenFile != "" {
		args = append(args, "--results-api-token-file="+o.TokenFile)
	}
	if o.NATSURL != "" {
		args = append(args, "--nats-url="+o.NATSURL, "--nats-user="+string(eventsv1.UserOperator), "--nats-password-file="+o.NATSPasswordFile)
	}
	if o.RetryBackoff > 0 {
		args = append(args, "--retry-backoff="+o.RetryBackoff.String(), "--retry-backoff-max="+(8*o.RetryBackoff).String())
	}
	if o.JobTTL > 0 {
		args = append(args, "--job-ttl="+o.JobTTL.String())
	}
	o.p, err = proc.Start(proc.Spec{Name: "operator", Binary: o.Binary, LogDir: o.LogDir,
		Args: append(args, o.ExtraArgs...), Env: []string{"KUBECONFIG=" + o.Kubeconfig}})
	if err != nil {
		return err
	}
	return o.p.WaitReady(ctx, 60*time.Second, proc.HTTPOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", o.ProbePort)))
}

// MetricsURL is the operator's Prometheus endpoint.
func (o *Operator) MetricsURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", o.MetricsPort)
}

// Pid is the operator's process id.
func (o *Operator) Pid() int { return o.p.Pid() }

// Stop ends the operator gracefully; Kill crashes it.
func (o *Operator) Stop() {
	if o.p != nil {
		_ = o.p.Stop(10 * time.Second)
	}
}

// Kill ends the operator with SIGKILL, like a crash.
func (o *Operator) Kill() {
	if o.p != nil {
		o.p.Kill()
	}
}
