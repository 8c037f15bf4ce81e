// Command coredns is CoreDNS (github.com/coredns/coredns, pinned in go.mod)
// with only the plugins the local stack's cluster DNS uses: the stack runs it
// on the real node's gateway as the cluster's DNS server (the kubelet's
// clusterDNS), answering cluster.local from the API server and nothing else.
//
// It is CoreDNS's own main (coremain.Run) with a shorter plugin list, the
// documented way to build CoreDNS with a chosen set of plugins: the full
// build links every cloud provider's SDK (Route 53, Azure, Cloud DNS) that
// a stack never uses, and takes several times longer to build cold.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

// directives are the compiled-in plugins in the order CoreDNS's plugin.cfg
// gives them (the order a query runs through them, whatever the Corefile's).
var directives = []string{
	"bind",
	"ready",
	"health",
	"errors",
	"log",
	"loadbalance",
	"cache",
	"kubernetes",
}

func init() { dnsserver.Directives = directives }

func main() { coremain.Run() }
