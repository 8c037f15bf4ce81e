package executor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// mounts maps container paths to host paths for one container.
type mounts []struct{ container, host string }

// prepareVolumes gives every Pod volume a host directory: emptyDirs become
// temp dirs, projected service-account tokens are requested through the
// TokenRequest API, projected Secrets are copied in.
func (e *Executor) prepareVolumes(ctx context.Context, pod *corev1.Pod, dir string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if host := e.volumeOverride(v); host != "" {
			out[v.Name] = host
			continue
		}
		host := filepath.Join(dir, "volumes", v.Name)
		if err := os.MkdirAll(host, 0o700); err != nil {
			return nil, err
		}
		out[v.Name] = host
		switch {
		case v.EmptyDir != nil:
		case v.Projected != nil:
			if err := e.project(ctx, pod, v.Projected, host); err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
		default:
			return nil, fmt.Errorf("volume %s: only emptyDir and projected volumes are supported", v.Name)
		}
	}
	return out, nil
}

func (e *Executor) volumeOverride(v corev1.Volume) string {
	if e.Volume == nil {
		return ""
	}
	return e.Volume(v)
}

func (e *Executor) project(ctx context.Context, pod *corev1.Pod, p *corev1.ProjectedVolumeSource, host string) error {
	for _, src := range p.Sources {
		switch {
		case src.ServiceAccountToken != nil && e.TokenFile != "":
			b, err := os.ReadFile(e.TokenFile)
			if err != nil {
				return err
			}
			if err := writeFile(host, src.ServiceAccountToken.Path, b); err != nil {
				return err
			}
		case src.ServiceAccountToken != nil:
			t := src.ServiceAccountToken
			sa := pod.Spec.ServiceAccountName
			if sa == "" {
				sa = "default"
			}
			req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
				ExpirationSeconds: t.ExpirationSeconds,
				BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
			}}
			if t.Audience != "" {
				req.Spec.Audiences = []string{t.Audience}
			}
			tr, err := e.Client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("request token for service account %s/%s: %w", pod.Namespace, sa, err)
			}
			if err := writeFile(host, t.Path, []byte(tr.Status.Token)); err != nil {
				return err
			}
		case src.Secret != nil:
			s, err := e.Client.CoreV1().Secrets(pod.Namespace).Get(ctx, src.Secret.Name, metav1.GetOptions{})
			if err != nil {
				if src.Secret.Optional != nil && *src.Secret.Optional {
					continue
				}
				return fmt.Errorf("secret %s: %w", src.Secret.Name, err)
			}
			for _, item := range src.Secret.Items {
				if data, ok := s.Data[item.Key]; ok {
					if err := writeFile(host, item.Path, data); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func writeFile(dir, rel string, data []byte) error {
	path := filepath.Join(dir, filepath.Clean("/"+rel))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// containerMounts lists a container's mounts, longest container path first.
func containerMounts(c corev1.Container, hostDirs map[string]string) (mounts, error) {
	var m mounts
	for _, vm := range c.VolumeMounts {
		host, ok := hostDirs[vm.Name]
		if !ok {
			return nil, fmt.Errorf("container %s mounts unknown volume %s", c.Name, vm.Name)
		}
		if vm.SubPath != "" {
			host = filepath.Join(host, filepath.Clean("/"+vm.SubPath))
		}
		m = append(m, struct{ container, host string }{filepath.Clean(vm.MountPath), host})
	}
	sort.Slice(m, func(i, j int) bool { return len(m[i].container) > len(m[j].container) })
	return m, nil
}

// rewrite replaces container paths in s (an argument or env value) with the
// host paths backing them. A path counts where it starts s or follows '=',
// ':' or ',' and ends s or is followed by '/'.
func (m mounts) rewrite(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if i == 0 || strings.ContainsRune("=:,", rune(s[i-1])) {
			if mp, ok := m.match(s[i:]); ok {
				b.WriteString(mp.host)
				i += len(mp.container)
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

func (m mounts) match(s string) (struct{ container, host string }, bool) {
	for _, mp := range m {
		if strings.HasPrefix(s, mp.container) && (len(s) == len(mp.container) || s[len(mp.container)] == '/') {
			return mp, true
		}
	}
	return struct{ container, host string }{}, false
}
