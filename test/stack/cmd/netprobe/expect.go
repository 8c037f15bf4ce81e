package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// target is one address and what is expected of a TCP connect to it:
// allow (it connects), deny (it fails) or report (either; printed only).
type target struct {
	want, addr string
}

// expect connects to every target once a round, a round a second, until a
// round meets every allow and deny expectation, and prints each round's
// results ("allow ADDR ok", "deny ADDR failed: …"); the last round is the
// verdict. It fails when no round within the given seconds met them.
func expect(seconds string, specs []string) error {
	n, err := strconv.Atoi(seconds)
	if err != nil || n < 1 {
		return fmt.Errorf("expect: SECONDS %q: want a positive number", seconds)
	}
	var targets []target
	for _, s := range specs {
		want, addr, ok := strings.Cut(s, ":")
		if !ok || (want != "allow" && want != "deny" && want != "report") {
			return fmt.Errorf("expect: %q: want allow:ADDR, deny:ADDR or report:ADDR", s)
		}
		targets = append(targets, target{want, addr})
	}
	if len(targets) == 0 {
		return errors.New("expect: no address")
	}
	deadline := time.Now().Add(time.Duration(n) * time.Second)
	for round := 1; ; round++ {
		met := true
		var lines []string
		for _, t := range targets {
			if err := connect(t.addr); err != nil {
				lines = append(lines, fmt.Sprintf("%s %s failed: %v", t.want, t.addr, err))
				met = met && t.want != "allow"
			} else {
				lines = append(lines, fmt.Sprintf("%s %s connected", t.want, t.addr))
				met = met && t.want != "deny"
			}
		}
		if met || time.Now().After(deadline) {
			fmt.Printf("round %d (%s):\n  %s\n", round, map[bool]string{true: "as expected", false: "NOT as expected"}[met], strings.Join(lines, "\n  "))
			if !met {
				return fmt.Errorf("no round in %ss was as expected", seconds)
			}
			return nil
		}
		time.Sleep(time.Second)
	}
}

// connect opens a TCP connection to addr (a name resolves through the
// Pod's resolv.conf) within 2 seconds and closes it.
func connect(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}
