// Command dockerfilecheck checks Crowsnest's Dockerfiles without a Docker
// engine: every Dockerfile in the repository must parse with BuildKit's own
// parser, every path it copies from the build context (the repository root)
// must exist and must not be excluded by .dockerignore, and a Dockerfile
// next to a go.mod must copy every local directory that module's replace
// directives point at, or the GOWORK=off build inside the image fails.
// Its tests also replay the Go build stage of each release Dockerfile
// (ReplayStage): only the files the stage copies, laid out as in the image,
// then the make target its RUN calls with its ENV — so "the image builds" is
// checked by compiling, not assumed.
//
// A Dockerfile whose build context is generated (the Tilt dev image) says
// "# dockerfilecheck: parse-only" and is only parsed.
//
//	go run . -root ../../..
package main
