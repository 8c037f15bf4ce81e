package node

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"os"
	"path/filepath"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/pki"
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
	ca, err := pki.NewCA("crowsnest-node-ca")
	if err != nil {
		return nil, err
	}
	if err := pki.WritePEM(p.CAFile, "CERTIFICATE", ca.DER); err != nil {
		return nil, err
	}
	serving := &x509.Certificate{
		Subject:  pkix.Name{CommonName: "crowsnest-node"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{nodeIP},
	}
	if err := ca.Issue(serving, p.ServingCertFile, p.ServingKeyFile); err != nil {
		return nil, err
	}
	client := &x509.Certificate{
		Subject:  pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if err := ca.Issue(client, p.APIClientCertFile, p.APIClientKeyFile); err != nil {
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
