// Command netprobe checks Services and cluster DNS from inside a Pod on the
// stack's real node. The stack's tests build it into a small image:
//
//	netprobe serve PORT            answer every TCP connection with "netprobe <hostname>"
//	netprobe dial NAME:PORT [NAME] resolve NAME through the Pod's resolv.conf, connect,
//	                               print what the server said; a second NAME must not resolve
//	netprobe expect SECONDS allow:ADDR|deny:ADDR|report:ADDR ...
//	                               TCP connects (2 s each) in rounds until, in one round,
//	                               every allow address connects and every deny one fails
//
// dial retries for up to a minute (a Service's rules and DNS records follow
// its creation by a moment) and exits 1 when it never succeeds. expect
// (expect.go) exits 1 when no round within SECONDS met the expectation
// (NetworkPolicy rules follow a Pod's start by a moment).
package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: netprobe serve PORT | netprobe dial NAME:PORT [NAME] | netprobe expect SECONDS allow:ADDR|deny:ADDR|report:ADDR ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2])
	case "dial":
		err = dial(os.Args[2], os.Args[3:])
	case "expect":
		err = expect(os.Args[2], os.Args[3:])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "netprobe:", err)
		os.Exit(1)
	}
}

func serve(port string) error {
	ln, err := net.Listen("tcp", ":"+port)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = fmt.Fprintf(c, "netprobe %s\n", host)
			_ = c.Close()
		}
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	return ln.Close()
}

func dial(target string, mustNotResolve []string) error {
	name, port, err := net.SplitHostPort(target)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		if last = try(ctx, name, port); last == nil {
			break
		}
		fmt.Println("retrying:", last)
		time.Sleep(time.Second)
	}
	if last != nil {
		return last
	}
	for _, n := range mustNotResolve {
		addrs, err := net.DefaultResolver.LookupHost(ctx, n)
		if err == nil {
			return fmt.Errorf("%s resolved to %v: the cluster DNS answers names outside the cluster", n, addrs)
		}
		fmt.Printf("not resolved %s: %v\n", n, err)
	}
	return nil
}

func try(ctx context.Context, name, port string) error {
	addrs, err := net.DefaultResolver.LookupHost(ctx, name)
	if err != nil {
		return err
	}
	fmt.Printf("resolved %s %v\n", name, addrs)
	d := net.Dialer{Timeout: 5 * time.Second}
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(addrs[0], port))
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return fmt.Errorf("read from %s: %w", c.RemoteAddr(), err)
	}
	fmt.Printf("connected %s %s", c.RemoteAddr(), line)
	return nil
}
