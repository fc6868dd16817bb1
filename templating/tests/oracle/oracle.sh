#!/usr/bin/env bash
# Builds the Go oracle (render.go, GOPATH mode, offline, with Debian's golang-go and
# golang-github-masterminds-sprig-dev) and runs it.
#
#   oracle.sh build            builds (if needed) and prints the binary's path
#   oracle.sh corpus [DIR]     renders the corpus (default: corpus/ beside this script), JSON lines
#   oracle.sh show [FILTER]    renders the corpus and prints it readably (cases whose name
#                              contains FILTER), for reviewing what Go does
#   oracle.sh stdin            renders JSON-line cases from stdin
#   oracle.sh funcs            lists the sprig functions the oracle has (TxtFuncMap - env - expandenv)
#
# The binary is cached under ${ORACLE_CACHE:-<workspace>/target/oracle}/render-<hash of render.go>.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
ws="$(cd "$here/../../.." && pwd)"
cache="${ORACLE_CACHE:-$ws/target/oracle}"

build() {
  command -v go >/dev/null || { echo "go not installed (apt-get install golang-go golang-github-masterminds-sprig-dev)" >&2; exit 3; }
  [ -d /usr/share/gocode/src/github.com/Masterminds/sprig ] || { echo "sprig sources missing (apt-get install golang-github-masterminds-sprig-dev)" >&2; exit 3; }
  local hash bin
  hash="$(sha256sum "$here/render.go" | cut -c1-16)"
  bin="$cache/render-$hash"
  if [ ! -x "$bin" ]; then
    mkdir -p "$cache/gocache"
    GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$cache/gocache" GOFLAGS= \
      go build -o "$bin.tmp.$$" "$here/render.go"
    mv -f "$bin.tmp.$$" "$bin"
  fi
  printf '%s\n' "$bin"
}

cmd="${1:-corpus}"
case "$cmd" in
  build) build ;;
  corpus) bin="$(build)"; TZ=UTC "$bin" -corpus "${2:-$here/corpus}" ;;
  stdin) bin="$(build)"; TZ=UTC "$bin" ;;
  funcs) bin="$(build)"; "$bin" -list-funcs ;;
  show)
    bin="$(build)"
    TZ=UTC "$bin" -corpus "$here/corpus" | python3 -c '
import json, sys
flt = sys.argv[1] if len(sys.argv) > 1 else ""
for line in sys.stdin:
    r = json.loads(line)
    if flt not in r["name"]:
        continue
    print("=== %s (%s:%d)%s" % (r["name"], r["file"], r["line"], "  SKIP " + r["skip"] if r.get("skip") else ""))
    print("  template: " + json.dumps(r["template"], ensure_ascii=False))
    if r["ok"]:
        print("  output:   " + json.dumps(r["output"], ensure_ascii=False))
    else:
        print("  %s error: %s" % (r["phase"], r["error"]))
' "${2:-}"
    ;;
  *) echo "usage: $0 build|corpus [DIR]|show [FILTER]|stdin|funcs" >&2; exit 2 ;;
esac
