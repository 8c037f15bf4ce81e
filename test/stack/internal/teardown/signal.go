package teardown

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// OnSignal runs closeAll and exits with status 1 when SIGTERM or SIGINT
// arrives; stop ends the watch. Call stop after closing in the normal way,
// and make closeAll wait for a close already running (sync.Once does): a
// signal during that close then waits for it rather than killing the
// process halfway.
// From the first call on, the process also outlives the reader of its
// output (OutliveOutputReader).
func OnSignal(closeAll func()) (stop func()) {
	OutliveOutputReader()
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, os.Interrupt)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-c:
			fmt.Fprintf(os.Stderr, "teardown: %s: removing what this run started\n", sig)
			closeAll()
			os.Exit(1)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(c)
		close(done)
	}
}

// OutliveOutputReader keeps the process alive when the reader of its
// standard output or error goes away: the writes fail (EPIPE) instead of
// killing it with SIGPIPE. A test binary's output is a pipe to go test, and
// a stop from outside signals the whole process group: go test dies of its
// SIGTERM at once, and the test binary's first line about closing (or a
// log line while the node stops) killed it before the node's Pods, mounts
// and links were removed. Without a reader the process goes on to close, on
// the signal or after its tests.
func OutliveOutputReader() { signal.Ignore(syscall.SIGPIPE) }
