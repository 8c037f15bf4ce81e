// Package pki is the local stack's certificate authorities: a CA made on
// the spot (ECDSA P-256, a week's validity) that issues the serving and
// client certificates of kube-apiserver and the real node's kubelet.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"time"
)

// Validity of every certificate: from an hour ago (clock skew) for a week.
const (
	backdate = time.Hour
	lifetime = 7 * 24 * time.Hour
)

// CA is a certificate authority with its key in memory.
type CA struct {
	DER    []byte // the CA certificate
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	serial int64
}

// NewCA makes a self-signed CA named cn.
func NewCA(cn string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: now.Add(-backdate), NotAfter: now.Add(lifetime),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("CA %s: %w", cn, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{DER: der, cert: cert, key: key, serial: 1}, nil
}

// PEM is the CA certificate, PEM-encoded.
func (c *CA) PEM() []byte { return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.DER}) }

// Issue signs a new key's certificate from tmpl (its subject, usages and
// names; serial and validity are set here) and writes certificate and key
// as PEM files.
func (c *CA) Issue(tmpl *x509.Certificate, certFile, keyFile string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	c.serial++
	now := time.Now()
	tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = big.NewInt(c.serial), now.Add(-backdate), now.Add(lifetime)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return fmt.Errorf("issue %s: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := WritePEM(certFile, "CERTIFICATE", der); err != nil {
		return err
	}
	return WritePEM(keyFile, "EC PRIVATE KEY", keyDER)
}

// WritePEM writes der as one PEM block of type typ, readable by root only.
func WritePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
