// Command pause is the real node's Pod-sandbox program: it holds the Pod's
// namespaces open until it is told to stop, like registry.k8s.io/pause.
// The stack builds it into a local image so the node pulls nothing from
// outside.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	<-c
}
