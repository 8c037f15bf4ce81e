package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	root := flag.String("root", ".", "repository root (the Docker build context)")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintln(os.Stderr, "dockerfilecheck:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	files, err := FindDockerfiles(root)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no Dockerfile found under %s", root)
	}
	var problems []string
	for _, f := range files {
		p, err := Check(root, f)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		problems = append(problems, p...)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d problem(s) in %d Dockerfile(s)", len(problems), len(files))
	}
	fmt.Printf("dockerfilecheck: %d Dockerfiles parse and copy only existing context paths\n", len(files))
	return nil
}
