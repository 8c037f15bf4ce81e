// Package proc runs the stack's components as child processes: each logs to
// its own file, dies with the stack (Pdeathsig), and is stopped with SIGTERM
// and, after a grace period, SIGKILL.
package proc
