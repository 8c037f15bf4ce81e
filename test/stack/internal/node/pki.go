package node

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI is the node's own certificate authority: the kubelet's serving
// certificate (for the node's address, verified by kube-apiserver) and the
// client certificate kube-apiserver presents to the kubelet (logs, exec,
// port-forward), which the kubelet verifies. Anonymous requests to the
// kubelet are refused, as in a hardened cluster.
type PKI struct {
	CAFile                          string
	ServingCertFile, ServingKeyFile string
	// APIClientCertFile is kube-apiserver's client certificate for the
	// kubelet: CN kube-apiserver-kubelet-client in group system:masters,
	// which the kubelet's Webhook authorizer allows.
	APIClientCertFile, APIClientKeyFile string
}

// WritePKI creates the CA and both certificates under dir.
func WritePKI(dir string, nodeIP net.IP) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &PKI{
		CAFile:          filepath.Join(dir, "ca.crt"),
		ServingCertFile: filepath.Join(dir, "kubelet.crt"), ServingKeyFile: filepath.Join(dir, "kubelet.key"),
		APIClientCertFile: filepath.Join(dir, "apiserver-kubelet-client.crt"), APIClientKeyFile: filepath.Join(dir, "apiserver-kubelet-client.key"),
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "crowsnest-node-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("node CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	if err := writePEM(p.CAFile, "CERTIFICATE", caDER); err != nil {
		return nil, err
	}
	serving := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "crowsnest-node"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{nodeIP},
	}
	if err := issue(ca, caKey, serving, p.ServingCertFile, p.ServingKeyFile); err != nil {
		return nil, err
	}
	client := &x509.Certificate{
		SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if err := issue(ca, caKey, client, p.APIClientCertFile, p.APIClientKeyFile); err != nil {
		return nil, err
	}
	return p, nil
}

// APIServerArgs are the kube-apiserver flags that make it talk to this
// node's kubelet the way a cluster's API server does: with its client
// certificate, verifying the kubelet's, by the node's InternalIP.
func (p *PKI) APIServerArgs() map[string]string {
	return map[string]string{
		"kubelet-client-certificate":      p.APIClientCertFile,
		"kubelet-client-key":              p.APIClientKeyFile,
		"kubelet-certificate-authority":   p.CAFile,
		"kubelet-preferred-address-types": "InternalIP",
	}
}

func issue(ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate, certFile, keyFile string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("issue %s: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := writePEM(certFile, "CERTIFICATE", der); err != nil {
		return err
	}
	return writePEM(keyFile, "EC PRIVATE KEY", keyDER)
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
