package executor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// exitCodeTimeout is what a container killed at the run timeout exits with
// (137, as after SIGKILL).
const exitCodeTimeout = 137

// runPod runs the init containers, then the containers, in order.
func (e *Executor) runPod(ctx context.Context, pod *corev1.Pod, log *slog.Logger) error {
	dir, err := os.MkdirTemp(e.WorkDir, pod.Namespace+"_"+pod.Name+"_")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := e.setStatus(ctx, pod, started(pod)); err != nil {
		return err
	}
	hostDirs, err := e.prepareVolumes(ctx, pod, dir)
	if err != nil {
		// A kubelet reports a volume it cannot mount and never starts the Pod.
		return e.setStatus(ctx, pod, failedToStart(err))
	}
	for i, c := range pod.Spec.InitContainers {
		res := e.runContainer(ctx, c, hostDirs, dir, log)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := e.setStatus(ctx, pod, initDone(i, res)); err != nil {
			return err
		}
		if res.exitCode != 0 {
			return nil
		}
	}
	if err := e.setStatus(ctx, pod, containersRunning()); err != nil {
		return err
	}
	if err := e.waitHeld(ctx, pod, log); err != nil {
		return err
	}
	// Scan Pods have one main container; more would run in parallel on a
	// kubelet, here they run one after another.
	for i, c := range pod.Spec.Containers {
		res := e.runContainer(ctx, c, hostDirs, dir, log)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := e.setStatus(ctx, pod, containerDone(i, res, i == len(pod.Spec.Containers)-1)); err != nil {
			return err
		}
	}
	return nil
}

// result is how one container ended.
type result struct {
	exitCode int32
	reason   string // Completed, Error, StartError
	message  string
	started  time.Time
	finished time.Time
}

func (e *Executor) runContainer(ctx context.Context, c corev1.Container, hostDirs map[string]string, dir string, log *slog.Logger) result {
	res := result{started: time.Now()}
	fail := func(err error) result {
		res.exitCode, res.reason, res.message, res.finished = 128, "StartError", err.Error(), time.Now()
		return res
	}
	bin, err := e.Binary(c)
	if err != nil {
		return fail(err)
	}
	m, err := containerMounts(c, hostDirs)
	if err != nil {
		return fail(err)
	}
	args := append(append([]string{}, c.Command...), c.Args...)
	if len(c.Command) > 0 {
		args = args[1:] // the binary stands in for the image's command
	}
	for i := range args {
		args[i] = m.rewrite(args[i])
	}
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, ev := range c.Env {
		if ev.ValueFrom != nil {
			return fail(fmt.Errorf("env %s: valueFrom is not supported by the scan executor", ev.Name))
		}
		env = append(env, ev.Name+"="+m.rewrite(ev.Value))
	}
	env = append(env, e.Env...)
	logPath := filepath.Join(dir, c.Name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return fail(err)
	}
	defer logFile.Close()
	cctx, cancel := context.WithTimeout(ctx, e.Timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr, cmd.Dir = env, logFile, logFile, dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	log.Info("container start", "container", c.Name, "binary", bin)
	err = cmd.Run()
	res.finished = time.Now()
	var exit *exec.ExitError
	switch {
	case err == nil:
		res.reason = "Completed"
	case cctx.Err() != nil && ctx.Err() == nil:
		res.exitCode, res.reason = exitCodeTimeout, "Error"
	case errors.As(err, &exit):
		res.exitCode, res.reason = int32(exit.ExitCode()), "Error"
		if res.exitCode < 0 {
			res.exitCode = exitCodeTimeout
		}
	default:
		return fail(err)
	}
	if res.exitCode != 0 && c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
		res.message = tail(logPath)
	}
	log.Info("container exit", "container", c.Name, "exitCode", res.exitCode, "seconds", res.finished.Sub(res.started).Seconds())
	return res
}

// tail is what a kubelet puts in the termination message from the logs:
// the last 80 lines, at most 2048 bytes.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > 80 {
		lines = lines[len(lines)-80:]
	}
	s := string(bytes.Join(lines, []byte("\n")))
	if len(s) > 2048 {
		s = s[len(s)-2048:]
	}
	return strings.TrimSpace(s)
}
