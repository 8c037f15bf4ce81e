#!/usr/bin/env bash
# Tests hack/patched-modules.sh offline, on a throwaway module that requires
# one dependency (replaced by a local folder, so nothing is downloaded): a
# patch applies to a copy, the workspace file builds the patched code and
# GOWORK=off the original; a copy is made once per patch, another patch gets
# its own; a patch named for another version than the module selects, and
# a patch that does not apply, fail with their reason and leave no copy;
# --packages names the packages a patch changes. `make test-ci` runs it.
set -euo pipefail
hack=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GOWORK=off GOFLAGS=-mod=mod GOPROXY=off
cd "$work"

mkdir -p dep app patches
printf 'module example.com/dep\n\ngo 1.26.0\n' >dep/go.mod
printf 'package dep\n\n// V says which code was built.\nconst V = "upstream"\n' >dep/dep.go
printf 'module example.com/app\n\ngo 1.26.0\n\nrequire example.com/dep v1.0.0\n\nreplace example.com/dep v1.0.0 => ../dep\n' >app/go.mod
printf 'package main\n\nimport (\n\t"fmt"\n\n\t"example.com/dep"\n\t"example.com/dep/sub"\n)\n\nfunc main() { fmt.Println(dep.V, sub.S) }\n' >app/main.go
mkdir -p dep/sub
printf 'package sub\n\nconst S = "sub"\n' >dep/sub/sub.go
cat >patches/example.com+dep@v1.0.0.patch <<'P'
--- a/dep.go
+++ b/dep.go
@@ -1,4 +1,4 @@
 package dep
 
 // V says which code was built.
-const V = "upstream"
+const V = "patched"
--- /dev/null
+++ b/sub/extra.go
@@ -0,0 +1,3 @@
+package sub
+
+const Extra = 1
P

failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

run() { "$hack/patched-modules.sh" app "$1" copies "$2"; }
out=$(run patches copies/work/a/app.work) || fail "the patch did not apply"
[[ $out == "$work/copies/work/a/app.work" ]] || fail "printed $out, not the workspace file"
got=$(cd app && GOWORK=$work/copies/work/a/app.work GOFLAGS= go run .)
[[ $got == "patched sub" ]] || fail "the workspace file built: $got"
got=$(cd app && go run .)
[[ $got == "upstream sub" ]] || fail "GOWORK=off built: $got"
grep -q '"upstream"' dep/dep.go || fail "the original folder was changed"
copy=$(echo copies/example.com/dep@v1.0.0-*)
[[ -f $copy/sub/extra.go ]] || fail "the patch's new file is not in the copy ($copy)"
grep -q "=> ../../example.com/dep@v1.0.0-[0-9a-f]\{16\}$" copies/work/a/app.work || fail "the replacement is not relative to the workspace file: $(cat copies/work/a/app.work)"

# A second checkout's workspace file uses the same copy; a changed patch
# gets a copy of its own.
touch "$copy/marker"
run patches copies/work/b/app.work >/dev/null
[[ -f $copy/marker && $(ls -d copies/example.com/dep@*) == "$copy" ]] || fail "an unchanged patch made the copy again"
cmp -s <(tail -n +2 copies/work/a/app.work) <(tail -n +2 copies/work/b/app.work) || fail "two checkouts' workspace files differ: $(cat copies/work/b/app.work)"
printf '\n' >>patches/example.com+dep@v1.0.0.patch
run patches copies/work/a/app.work >/dev/null
[[ $(ls -d copies/example.com/dep@* | wc -l) == 2 ]] || fail "a changed patch reused the old copy"
grep -q "$(basename "$copy")" copies/work/a/app.work && fail "the workspace file still names the old copy"

# --packages: the module's root package and sub (the new file's).
got=$("$hack/patched-modules.sh" --packages patches | tr '\n' ' ')
[[ $got == "example.com/dep example.com/dep/sub " ]] || fail "--packages printed: $got"

# A patch for another version.
mkdir -p other
sed 's/upstream/x/' patches/example.com+dep@v1.0.0.patch >other/example.com+dep@v1.1.0.patch
if out=$("$hack/patched-modules.sh" app other out2 out2/work/a/app.work 2>&1); then fail "a patch for v1.1.0 applied to v1.0.0"; fi
[[ $out == *"selects example.com/dep v1.0.0"*"re-base"* ]] || fail "the version mismatch said: $out"
[[ -z $(ls -A out2/example.com 2>/dev/null) ]] || fail "a copy was left after the version mismatch"

# A patch that does not apply (its context is not in the file).
mkdir -p bad
sed 's/V says which code was built/V says something else/' patches/example.com+dep@v1.0.0.patch >bad/example.com+dep@v1.0.0.patch
if out=$("$hack/patched-modules.sh" app bad out3 out3/work/a/app.work 2>&1); then fail "a patch that does not apply passed"; fi
[[ $out == *"does not apply"* ]] || fail "the failed patch said: $out"
[[ -z $(ls -A out3/example.com 2>/dev/null) ]] || fail "a copy was left after the failed patch: $(ls -R out3)"
[[ ! -e out3/work/a/app.work ]] || fail "a workspace file was written after the failed patch"

if ((failures > 0)); then
	echo "patched-modules_test.sh: $failures failures"
	exit 1
fi
echo "patched-modules_test.sh: ok"
