package controlplane

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/pki"
)

// serviceNames are the names in-cluster clients dial the API server by
// (the default namespace's kubernetes Service).
var serviceNames = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}

// serveOn makes kube-apiserver listen on address (a free port) and
// advertise it, which puts it into the endpoints of the default
// namespace's kubernetes Service, and serve a certificate that names it,
// serviceIP (that Service's ClusterIP, what KUBERNETES_SERVICE_HOST holds
// in a Pod) and the Service's DNS names, so that in-cluster clients in the
// real node's Pods verify it. envtest's own certificate names only
// localhost and the listen address; it keeps a certificate directory it
// finds filled, so the CA, the serving pair and the service-account signing
// pair are written here first.
func serveOn(env *envtest.Environment, dir string, address, serviceIP net.IP) error {
	api := env.ControlPlane.GetAPIServer()
	port, err := freePortOn(address)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, err := writeServingCerts(dir, []net.IP{net.IPv4(127, 0, 0, 1), address, serviceIP})
	if err != nil {
		return fmt.Errorf("kube-apiserver certificates: %w", err)
	}
	api.CertDir = dir
	api.SecureServing.Address = address.String()
	api.SecureServing.Port = strconv.Itoa(port)
	api.SecureServing.CA = ca
	api.Configure().Set("advertise-address", address.String())
	return nil
}

// writeServingCerts writes apiserver.crt/.key (issued by a new CA, for ips
// and serviceNames) and sa-signer.crt/.key, the names envtest passes to
// kube-apiserver, and returns the CA certificate (PEM).
func writeServingCerts(dir string, ips []net.IP) ([]byte, error) {
	ca, err := pki.NewCA("crowsnest-stack-apiserver-ca")
	if err != nil {
		return nil, err
	}
	serving := &x509.Certificate{
		Subject:  pkix.Name{CommonName: "kube-apiserver"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: ips, DNSNames: serviceNames,
	}
	if err := ca.Issue(serving, filepath.Join(dir, "apiserver.crt"), filepath.Join(dir, "apiserver.key")); err != nil {
		return nil, err
	}
	// Service-account tokens are signed with RS256, as most clusters do.
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := pki.WritePEM(filepath.Join(dir, "sa-signer.crt"), "PUBLIC KEY", saPub); err != nil {
		return nil, err
	}
	if err := pki.WritePEM(filepath.Join(dir, "sa-signer.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)); err != nil {
		return nil, err
	}
	return ca.PEM(), nil
}

func freePortOn(ip net.IP) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		return 0, fmt.Errorf("free port on %s: %w", ip, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
