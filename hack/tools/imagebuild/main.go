package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/crowsnest-dev/crowsnest/hack/tools/imagebuild/internal/imagecheck"
	"github.com/crowsnest-dev/crowsnest/hack/tools/imagebuild/internal/oci"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

const usage = "usage: imagebuild build|check|push [flags] (imagebuild <command> -h lists them)"

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "build":
		return build(ctx, args[1:])
	case "check":
		return check(ctx, args[1:])
	case "push":
		return push(ctx, args[1:])
	default:
		return errors.New(usage)
	}
}

func build(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	component := fs.String("component", "", "component to build (operator, results-api, uploader, matcher, notifier, grype, nats)")
	root := fs.String("root", ".", "repository root (where the Makefile is)")
	version := fs.String("version", "", "version stamped into the binary and the labels")
	revision := fs.String("revision", "", "commit stamped into the binary and the labels")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated platforms of the image index")
	out := fs.String("out", "", "OCI layout directory to write (default dist/images/<component>)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := oci.Lookup(*component)
	if err != nil {
		return err
	}
	ps, err := oci.ParsePlatforms(*platforms)
	if err != nil {
		return err
	}
	rootDir, err := filepath.Abs(*root)
	if err != nil {
		return err
	}
	if *out == "" {
		*out = filepath.Join(rootDir, "dist", "images", c.Name)
	}
	created, err := createdTime(ctx, rootDir)
	if err != nil {
		return err
	}
	start := time.Now()
	d, err := oci.Build(ctx, oci.Options{
		Component: c, Root: rootDir, Version: *version, Revision: *revision,
		Created: created, Platforms: ps, Out: *out, Log: os.Stderr,
	})
	if err != nil {
		return err
	}
	fmt.Printf("%s %s@%s (%s) in %s\n", *out, c.Name, d, *platforms, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// createdTime is SOURCE_DATE_EPOCH, or else the commit time of HEAD: the same
// commit always gives the same image digests.
func createdTime(ctx context.Context, root string) (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		out, err := exec.CommandContext(ctx, "git", "-C", root, "log", "-1", "--format=%ct").Output()
		if err != nil {
			return time.Time{}, fmt.Errorf("commit time (set SOURCE_DATE_EPOCH): %w", err)
		}
		s = strings.TrimSpace(string(out))
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

func check(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	layoutDir := fs.String("layout", "", "OCI layout directory (dist/images/<component>)")
	component := fs.String("component", "", "component the layout holds")
	revision := fs.String("revision", "", "commit the labels must name")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "platforms the index must hold, exactly")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := oci.Lookup(*component)
	if err != nil {
		return err
	}
	ps, err := oci.ParsePlatforms(*platforms)
	if err != nil {
		return err
	}
	problems, err := imagecheck.Check(*layoutDir, imagecheck.Want{Component: c, Revision: *revision, Platforms: ps})
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s:\n  %s", *layoutDir, strings.Join(problems, "\n  "))
	}
	fmt.Printf("%s: %s image checks passed (%s)\n", *layoutDir, c.Name, *platforms)
	return nil
}

func push(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	layoutDir := fs.String("layout", "", "OCI layout directory (dist/images/<component>)")
	repo := fs.String("repo", "", "repository to push to, e.g. ghcr.io/crowsnest-dev/crowsnest-operator; the tag is the version the layout was built with")
	ref := fs.String("ref", "", "full image reference to push to instead of -repo (Tilt's $EXPECTED_REF)")
	insecure := fs.Bool("insecure", false, "allow plain HTTP to the registry (a local registry)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	idx, version, err := oci.ReadLayout(*layoutDir)
	if err != nil {
		return err
	}
	var opts []name.Option
	if *insecure {
		opts = append(opts, name.Insecure)
	}
	target := *ref
	if target == "" {
		if *repo == "" || version == "" {
			return fmt.Errorf("%s: push needs -ref, or -repo and a layout with a version (%s)", *layoutDir, oci.RefName)
		}
		target = *repo + ":" + version
	}
	r, err := name.ParseReference(target, opts...)
	if err != nil {
		return err
	}
	d, err := oci.Push(ctx, idx, r)
	if err != nil {
		return err
	}
	fmt.Printf("%s@%s\n", r, d)
	return nil
}
