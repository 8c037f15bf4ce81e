package service_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"
)

const audience = "crowsnest-results-api"

// cluster is a real kube-apiserver with real RBAC, plus a
// kube-controller-manager running only the ClusterRole aggregation
// controller (envtest runs no controllers: without it, a role aggregated
// to "view" would never reach it).
type cluster struct {
	t     *testing.T
	ctx   context.Context
	cfg   *rest.Config
	admin kubernetes.Interface
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	cfg := kubetest.StartT(t)
	cfg.QPS, cfg.Burst = 200, 400
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	c := &cluster{t: t, ctx: ctx, cfg: cfg, admin: kubernetes.NewForConfigOrDie(cfg)}
	c.startAggregation()
	return c
}

// startAggregation runs kube-controller-manager with the
// clusterrole-aggregation controller only; it dies with the test binary
// (Pdeathsig) and is killed when the test ends.
func (c *cluster) startAggregation() {
	t := c.t
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	api := clientcmdapi.NewConfig()
	api.Clusters["c"] = &clientcmdapi.Cluster{Server: c.cfg.Host, CertificateAuthorityData: c.cfg.CAData}
	api.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: c.cfg.CertData, ClientKeyData: c.cfg.KeyData, Token: c.cfg.BearerToken}
	api.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	api.CurrentContext = "x"
	if err := clientcmd.WriteToFile(*api, kc); err != nil {
		t.Fatal(err)
	}
	assets, err := kubetest.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	cmd := exec.Command(filepath.Join(assets, "kube-controller-manager"), "--kubeconfig="+kc,
		"--controllers=clusterrole-aggregation", "--leader-elect=false", "--use-service-account-credentials=false",
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logf, err := os.Create(filepath.Join(dir, "kcm.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logf.Close()
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func (c *cluster) namespace(name string) {
	_, err := c.admin.CoreV1().Namespaces().Create(c.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	must(c.t, err)
}

// user creates the service account users/name and returns its RBAC subject.
func (c *cluster) user(name string) rbacv1.Subject {
	_, err := c.admin.CoreV1().ServiceAccounts("users").Create(c.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	must(c.t, err)
	return rbacv1.Subject{Kind: "ServiceAccount", Name: name, Namespace: "users"}
}

// token mints a token of users/name for the results-api audience.
func (c *cluster) token(name string) string {
	c.t.Helper()
	tr, err := c.admin.CoreV1().ServiceAccounts("users").CreateToken(c.ctx, name, &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{
		Audiences: []string{audience}, ExpirationSeconds: ptr[int64](600)}}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return tr.Status.Token
}

func (c *cluster) clusterRole(name string, labels map[string]string, verbs ...string) {
	_, err := c.admin.RbacV1().ClusterRoles().Create(c.ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"crowsnest.dev"}, Resources: []string{"reports"}, Verbs: verbs}}}, metav1.CreateOptions{})
	must(c.t, err)
}

// bind binds role (a ClusterRole) to subject in namespace, or cluster-wide
// when namespace is "".
func (c *cluster) bind(namespace, role string, subject rbacv1.Subject) {
	ref := rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role}
	name := subject.Name + "-" + role
	var err error
	if namespace == "" {
		_, err = c.admin.RbacV1().ClusterRoleBindings().Create(c.ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: ref, Subjects: []rbacv1.Subject{subject}}, metav1.CreateOptions{})
	} else {
		_, err = c.admin.RbacV1().RoleBindings(namespace).Create(c.ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: ref, Subjects: []rbacv1.Subject{subject}}, metav1.CreateOptions{})
	}
	must(c.t, err)
}

// waitAggregated waits until the built-in "view" ClusterRole holds the
// rules of the roles aggregated to it, i.e. the controller ran.
func (c *cluster) waitAggregated() {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		v, err := c.admin.RbacV1().ClusterRoles().Get(c.ctx, "view", metav1.GetOptions{})
		if err == nil {
			for _, r := range v.Rules {
				for _, g := range r.APIGroups {
					if g == "crowsnest.dev" {
						return
					}
				}
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatal(errors.New("the view ClusterRole did not get crowsnest-view's rules within 60s: aggregation is not running"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ptr[T any](v T) *T { return &v }
