package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
)

// certReloader hands the TLS handshake the certificate in certFile and
// keyFile, loaded again whenever either file's modification time or size
// changes: a renewed Secret (cert-manager) reaches the Pod's mounted files
// without a restart. A pair that fails to load (the two files caught
// mid-rotation) keeps the previous certificate in service.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger

	mu     sync.Mutex
	cert   *tls.Certificate
	loaded [2]fileStamp // of the pair in cert
	// The last pair that did not load, so it is warned about once.
	failed    [2]fileStamp
	hasFailed bool
}

// fileStamp is what tells a changed file apart: modification time (Unix
// nanoseconds) and size.
type fileStamp struct{ mod, size int64 }

func newCertReloader(certFile, keyFile string, log *slog.Logger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, log: log}
	stamps, err := r.stamps()
	if err != nil {
		return nil, fmt.Errorf("tls certificate: %w", err)
	}
	if err := r.load(stamps); err != nil {
		return nil, fmt.Errorf("tls certificate: %w", err)
	}
	return r, nil
}

// GetCertificate is tls.Config.GetCertificate.
func (r *certReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	stamps, err := r.stamps()
	if (err == nil && stamps == r.loaded) || (r.hasFailed && stamps == r.failed) {
		return r.cert, nil
	}
	if err == nil {
		err = r.load(stamps)
	}
	if err != nil {
		r.failed, r.hasFailed = stamps, true
		r.log.Warn("tls certificate not reloaded; serving the previous one", "error", err)
	}
	return r.cert, nil
}

func (r *certReloader) stamps() ([2]fileStamp, error) {
	var s [2]fileStamp
	for i, f := range []string{r.certFile, r.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return s, err
		}
		s[i] = fileStamp{fi.ModTime().UnixNano(), fi.Size()}
	}
	return s, nil
}

func (r *certReloader) load(stamps [2]fileStamp) error {
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return err
	}
	r.cert, r.loaded = &cert, stamps
	r.log.Info("tls certificate loaded", "cert_file", r.certFile)
	return nil
}
