// Package pgtest gives tests a real Postgres: a throwaway server started from
// the machine's Postgres binaries (as a non-root user, on a temp dir and a free
// loopback port), or the server named by CROWSNEST_TEST_DATABASE_URL. Every
// test gets a fresh database that is dropped when it ends.
package pgtest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// EnvDatabaseURL names an existing server to use instead of starting one.
const EnvDatabaseURL = "CROWSNEST_TEST_DATABASE_URL"

// Server is a throwaway Postgres server owned by the test process.
type Server struct {
	binDir  string
	dataDir string
	port    int
	runAs   string // non-empty when started through runuser because we are root
	listen  string // listen_addresses
	// exited receives the postmaster's exit; nil while none runs.
	exited chan error
}

// BinDir finds the Postgres server binaries: $CROWSNEST_PG_BIN, the newest
// /usr/lib/postgresql/*/bin, or initdb on $PATH.
func BinDir() (string, error) {
	if dir := os.Getenv("CROWSNEST_PG_BIN"); dir != "" {
		return dir, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(matches, func(i, j int) bool { return pgMajor(matches[i]) > pgMajor(matches[j]) })
	if len(matches) > 0 {
		return filepath.Dir(matches[0]), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("postgres server binaries not found: install them with `apt-get install postgresql` (make pg-install) or set CROWSNEST_PG_BIN")
}

func pgMajor(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

// ServerOptions open a server beyond loopback.
type ServerOptions struct {
	// Listen are addresses the server listens on besides 127.0.0.1 (e.g. a
	// bridge's gateway that Pods reach).
	Listen []string
	// HBA are pg_hba.conf lines appended to initdb's (which trust local
	// and loopback connections only), e.g.
	// "host crowsnest crowsnest 10.0.0.0/24 scram-sha-256".
	HBA []string
}

// StartServer initialises and starts a fresh server on loopback. It takes
// well under a second with fsync off; Stop removes every trace of it.
func StartServer() (*Server, error) { return StartServerWith(ServerOptions{}) }

// StartServerWith is StartServer with more listen addresses and client
// authentication rules.
func StartServerWith(o ServerOptions) (*Server, error) {
	binDir, err := BinDir()
	if err != nil {
		return nil, err
	}
	s := &Server{binDir: binDir, listen: strings.Join(append([]string{"127.0.0.1"}, o.Listen...), ",")}
	if os.Geteuid() == 0 {
		// Postgres refuses to run as root.
		if _, err := user.Lookup("postgres"); err != nil {
			return nil, fmt.Errorf("running as root needs the postgres system user (apt-get install postgresql): %w", err)
		}
		s.runAs = "postgres"
	}
	sweepStale(os.TempDir(), time.Now())
	s.dataDir, err = os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, err
	}
	if err := writeOwner(s.dataDir); err != nil {
		s.cleanup()
		return nil, err
	}
	if err := s.chownToRunner(s.dataDir); err != nil {
		s.cleanup()
		return nil, err
	}
	if err := s.run("initdb", "--auth=trust", "--no-sync", "--username=postgres", "--encoding=UTF8", "-D", s.pgdata()); err != nil {
		s.cleanup()
		return nil, err
	}
	if len(o.HBA) > 0 {
		hba, err := os.OpenFile(filepath.Join(s.pgdata(), "pg_hba.conf"), os.O_WRONLY|os.O_APPEND, 0)
		if err == nil {
			_, err = hba.WriteString(strings.Join(o.HBA, "\n") + "\n")
			if cerr := hba.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			s.cleanup()
			return nil, fmt.Errorf("pg_hba.conf: %w", err)
		}
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		if s.port, err = freePort(); err != nil {
			s.cleanup()
			return nil, err
		}
		if lastErr = s.start(); lastErr == nil {
			return s, nil
		}
	}
	log, _ := os.ReadFile(filepath.Join(s.dataDir, "server.log"))
	s.cleanup()
	return nil, fmt.Errorf("%w\nserver log:\n%s", lastErr, log)
}

// start runs the server on s.port as a child of this process that dies
// with it (Pdeathsig): `pg_ctl start` would daemonize it, and a test binary
// killed by `go test -timeout` left such servers running. pg_ctl still
// stops it (it signals the pid in postmaster.pid).
func (s *Server) start() error {
	log, err := os.OpenFile(filepath.Join(s.dataDir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(s.binDir, "postgres"), "-D", s.pgdata(),
		"-c", "listen_addresses="+s.listen, "-p", strconv.Itoa(s.port), "-k", s.dataDir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Dir = os.TempDir()
	// Go sets the parent-death signal after switching user, so it holds.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if s.runAs != "" {
		u, err := user.Lookup(s.runAs)
		if err != nil {
			_ = log.Close()
			return err
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return fmt.Errorf("postgres: %w", err)
	}
	exited := make(chan error, 1)
	go func() {
		exited <- cmd.Wait()
		_ = log.Close()
	}()
	s.exited = exited
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-exited:
			s.exited = nil
			return fmt.Errorf("postgres exited during start: %w", err)
		default:
		}
		if s.run("pg_isready", "-q", "-h", "127.0.0.1", "-p", strconv.Itoa(s.port)) == nil {
			return nil
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			s.reap()
			return errors.New("postgres not ready after 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// reap waits (at most 30s) for the postmaster a pg_ctl stop ended.
func (s *Server) reap() {
	if s.exited == nil {
		return
	}
	select {
	case err := <-s.exited:
		_ = err // stopped on purpose: how it exited does not matter
	case <-time.After(30 * time.Second):
	}
	s.exited = nil
}

// Pause stops the server as an outage or a restart would (pg_ctl stop -m
// fast: every client is cut off at once, committed data is kept) and keeps
// its data directory; Resume brings it back. (Not -m immediate: the server
// runs with synchronous_commit=off for speed, so a crash could lose the
// last commits, which a test counting rows must not confuse with a bug.)
func (s *Server) Pause() error {
	err := s.run("pg_ctl", "-w", "-D", s.pgdata(), "-m", "fast", "stop")
	s.reap()
	return err
}

// Resume starts a paused server again on the same port with the same data.
func (s *Server) Resume() error { return s.start() }

// AdminURL is a connection string for the server's postgres superuser.
func (s *Server) AdminURL() string { return s.DatabaseURL("postgres") }

// Port is the server's port (on every listen address).
func (s *Server) Port() int { return s.port }

// DatabaseURL is a connection string for the named database.
func (s *Server) DatabaseURL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// Stop shuts the server down and deletes its data directory.
func (s *Server) Stop() error {
	err := s.run("pg_ctl", "-w", "-D", s.pgdata(), "-m", "immediate", "stop")
	s.reap()
	s.cleanup()
	return err
}

func (s *Server) pgdata() string { return filepath.Join(s.dataDir, "data") }

func (s *Server) cleanup() { _ = os.RemoveAll(s.dataDir) }

func (s *Server) chownToRunner(dir string) error {
	if s.runAs == "" {
		return nil
	}
	u, err := user.Lookup(s.runAs)
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(dir, uid, gid)
}

func (s *Server) run(tool string, args ...string) error {
	name := filepath.Join(s.binDir, tool)
	if s.runAs != "" {
		args = append([]string{"-u", s.runAs, "--", name}, args...)
		name = "runuser"
	}
	cmd := exec.Command(name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = os.TempDir() // runuser's user may not read the caller's cwd
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s: %w\n%s", tool, err, out.String())
		}
		return nil
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		return fmt.Errorf("%s: timed out after 60s\n%s", tool, out.String())
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
