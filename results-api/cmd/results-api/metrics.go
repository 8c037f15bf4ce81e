package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authz"
)

// metricsAuthMode is --metrics-auth, defaulting to --read-auth: metrics
// carry every namespace's vulnerability counts, as private as the reports,
// and with open reads they tell nothing the API does not.
func metricsAuthMode(o *Options) string {
	if o.MetricsAuth != "" {
		return o.MetricsAuth
	}
	return o.ReadAuth
}

// metricsAuth builds the scrape authorization of --metrics-auth=kubernetes,
// the operator's (controller-runtime's filters.WithAuthenticationAndAuthorization):
// a TokenReview of the scraper's token for the API server's own audiences,
// with its own cache and failure budget (a flood of bad scrapes cannot lock
// out readers or writers), then a SubjectAccessReview for get on the
// non-resource URL /metrics.
func metricsAuth(o *Options, keys *issuerKeys) (*authz.Scrapers, error) {
	cfg, err := kubeConfig(o)
	if err != nil {
		return nil, err
	}
	k, err := keys.get(cfg)
	if err != nil {
		return nil, err
	}
	reviewer, err := authn.New(cfg, authn.Options{APIServerAudience: true, Keys: k})
	if err != nil {
		return nil, err
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return authz.NewScrapers(reviewer, kc)
}

// serveMetrics serves h on --metrics-listen until the returned server is
// closed; serve errors go to errc. With authorized scrapes (secure) it is
// HTTPS, so that scrapers' tokens never cross the network in clear: with
// --tls-cert-file's certificate when there is one (certs), else with a
// self-signed certificate made at start, as controller-runtime's metrics
// server does for the operator.
func serveMetrics(addr string, h http.Handler, secure bool, certs *certReloader, log *slog.Logger, errc chan<- error) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	if !secure {
		go func() { errc <- srv.Serve(ln) }()
		log.Info("serving metrics", "addr", ln.Addr().String(), "tls", false, "auth", false)
		return srv, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if certs != nil {
		tc.GetCertificate = certs.GetCertificate
	} else {
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("results-api-metrics", nil, nil)
		if err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("metrics: self-signed certificate: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("metrics: self-signed certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	srv.TLSConfig = tc
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
	log.Info("serving metrics", "addr", ln.Addr().String(), "tls", true, "self_signed", certs == nil, "auth", true)
	return srv, nil
}
