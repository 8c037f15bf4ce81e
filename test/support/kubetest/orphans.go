package kubetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// DieWithParent makes the etcd and kube-apiserver env starts from dir die
// when the process that started them dies, and returns a function that
// removes what it wrote. envtest starts them without a parent-death signal,
// so a test binary killed by `go test -timeout` (which panics past every
// deferred stop) left both running, parented to init. Each is started
// through a two-line script that execs the real binary under util-linux's
// `setpriv --pdeathsig KILL`: the signal survives exec, and the script
// becomes the real process, so envtest stops it as before. The paths are set
// on env's control plane, which wins over KUBEBUILDER_ASSETS. Without
// setpriv env is left as it is. The scripts go into a new directory under
// parent (the temp dir when empty): a caller with a state directory of its
// own keeps them there, so a process killed before it could remove them
// leaves them only where the rest of its state is.
func DieWithParent(env *envtest.Environment, dir, parent string) (func(), error) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return func() {}, nil
	}
	wrapped, err := os.MkdirTemp(parent, "crowsnest-kube-assets-")
	if err != nil {
		return nil, err
	}
	remove := func() { _ = os.RemoveAll(wrapped) }
	paths := map[string]string{}
	for _, name := range []string{"etcd", "kube-apiserver"} {
		script := fmt.Sprintf("#!/bin/sh\nexec %s --pdeathsig KILL -- %s \"$@\"\n", setpriv, filepath.Join(dir, name))
		paths[name] = filepath.Join(wrapped, name)
		if err := os.WriteFile(paths[name], []byte(script), 0o755); err != nil { //nolint:gosec // an executable script
			remove()
			return nil, err
		}
	}
	if env.ControlPlane.Etcd == nil {
		env.ControlPlane.Etcd = &envtest.Etcd{}
	}
	env.ControlPlane.Etcd.Path = paths["etcd"]
	env.ControlPlane.GetAPIServer().Path = paths["kube-apiserver"]
	return remove, nil
}
