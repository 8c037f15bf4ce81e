// Command vulnerable-app links old golang.org/x packages so that its build
// info lists them; it is a scan target for fixtures, never run in production.
package main

import (
	"fmt"

	"golang.org/x/crypto/ssh"
	"golang.org/x/net/html"
	"golang.org/x/net/http2"
	"golang.org/x/text/language"
)

func main() {
	var s http2.Server
	cfg := ssh.ServerConfig{}
	tag := language.Make("en")
	node := &html.Node{Data: "p"}
	fmt.Println(s.MaxConcurrentStreams, cfg.MaxAuthTries, tag, node.Data)
}
