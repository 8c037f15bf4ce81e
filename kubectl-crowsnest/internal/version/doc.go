// Package version says which build of kubectl-crowsnest is running, in the
// same words as every other Crowsnest binary (api/buildinfo): the plugin
// cannot import the api module, because `go install …@latest` refuses a
// module with replace directives. make passes -ldflags "-X …/version.Version=…
// -X …/version.Revision=…"; a `go install …@vX.Y.Z` build falls back to the
// module version and the toolchain's vcs stamp.
package version
