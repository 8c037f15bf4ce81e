package main

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authz"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
)

// issuerKeys builds, once, the service-account issuer keys that write and
// read tokens are verified against before TokenReview
// (--verify-token-signatures); both reviewers share them.
type issuerKeys struct {
	on   bool
	keys *authn.IssuerKeys
}

// get returns the shared keys, nil with --verify-token-signatures=false.
func (k *issuerKeys) get(cfg *rest.Config) (*authn.IssuerKeys, error) {
	if !k.on || k.keys != nil {
		return k.keys, nil
	}
	keys, err := authn.NewIssuerKeys(cfg, authn.KeyOptions{})
	if err != nil {
		return nil, err
	}
	k.keys = keys
	return keys, nil
}

// writeGate builds the write authorization of tokenreview mode: TokenReview
// and the scope checks (Pod-bound uploads, rematch, admin by
// SubjectAccessReview), all against the API server of the kubeconfig flag
// or the in-cluster configuration.
func writeGate(o *Options, keys *issuerKeys) (*authz.Gate, error) {
	cfg, err := kubeConfig(o)
	if err != nil {
		return nil, err
	}
	k, err := keys.get(cfg)
	if err != nil {
		return nil, err
	}
	reviewer, err := authn.New(cfg, authn.Options{Audience: o.Audience, Allowed: splitList(o.AllowedSAs), Keys: k})
	if err != nil {
		return nil, err
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	az, err := authz.New(kc, authz.Options{RematchServiceAccounts: splitList(o.RematchSAs), ScanServiceAccount: o.ScanSA})
	if err != nil {
		return nil, err
	}
	gate := &authz.Gate{Reviewer: reviewer, Authz: az, Audience: o.Audience}
	if err := gate.Check(); err != nil {
		return nil, err
	}
	return gate, nil
}

// kubeConfig is the API server connection of the kubeconfig flag, or the
// in-cluster one.
func kubeConfig(o *Options) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if o.Kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes config for tokenreview and subjectaccessreview: %w", err)
	}
	return cfg, nil
}

// readAuth builds the read authorization of --read-auth=kubernetes: its own
// TokenReview cache (read tokens are for --token-audience too) and
// SubjectAccessReviews; the rematch service accounts of gate (when
// --auth-mode=tokenreview) read everything.
func readAuth(o *Options, gate *authz.Gate, keys *issuerKeys) (*service.ReadAuth, error) {
	cfg, err := kubeConfig(o)
	if err != nil {
		return nil, err
	}
	k, err := keys.get(cfg)
	if err != nil {
		return nil, err
	}
	reviewer, err := authn.New(cfg, authn.Options{Audience: o.Audience, Keys: k})
	if err != nil {
		return nil, err
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	ra := &service.ReadAuth{Reviewer: reviewer, Audience: o.Audience, Client: kc}
	ra.AllNamespaces = o.ReadNamespaces == "all"
	if gate != nil {
		ra.Writers = gate.Authz
	}
	if o.ProxyUser != "" {
		trusted, err := trustedProxies(o.ProxyCIDRs)
		if err != nil {
			return nil, err
		}
		ra.Proxy = &authz.Proxy{UserHeader: o.ProxyUser, GroupsHeader: o.ProxyGroups, Trusted: trusted}
	}
	return ra, nil
}

// trustedProxies are the prefixes of --auth-proxy-trusted-cidrs; there
// must be one, or identity headers from any peer would be believed.
func trustedProxies(cidrs string) ([]netip.Prefix, error) {
	var trusted []netip.Prefix
	for _, c := range splitList(cidrs) {
		prefix, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("--auth-proxy-trusted-cidrs: %w", err)
		}
		trusted = append(trusted, prefix.Masked())
	}
	if len(trusted) == 0 {
		return nil, errors.New("--auth-proxy-user-header needs --auth-proxy-trusted-cidrs: headers from any peer would be believed")
	}
	return trusted, nil
}

func splitList(v string) []string {
	var out []string
	for _, a := range strings.Split(v, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// exceptionWatch configures --exceptions: a dynamic client of the
// kubeconfig (or in-cluster) connection.
func exceptionWatch(o *Options) (*service.Exceptions, error) {
	cfg, err := kubeConfig(o)
	if err != nil {
		return nil, err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client for exceptions: %w", err)
	}
	return &service.Exceptions{Client: dc, MaxLifetime: o.ExceptionMaxLifetime}, nil
}
