#!/usr/bin/env bash
# Builds the Debian package of landscaper-appliance:
#   1. installs cargo-deb 3.8.0 when it is missing,
#   2. builds the binary (release profile) and examples/gen-docs.rs (dev profile: it only prints
#      the clap definition, and an example build pulls in the dev-dependencies, whose features must
#      not leak into the packaged binary),
#   3. generates the man pages and shell completions into TARGET/<profile>/landscaper-appliance-docs,
#   4. runs cargo deb --no-build.
# Build output goes to stderr; the last line on stdout is the path of the .deb
# (TARGET/debian/landscaper-appliance_<version>-1_<arch>.deb).
#
# Environment:
#   CARGO_TARGET_DIR         cargo's target folder (default: ./target)
#   LSA_DEB_PROFILE          cargo profile to package (default: release; `dev` packages the debug
#                            build, which the packaging test uses to reuse the test suite's build)
#   LSA_DEB_NO_BUILD=1       do not run cargo build (the binary and TARGET/debug/examples/gen-docs
#                            must be built)
#   LSA_DEB_FAST=1           faster, larger compression (cargo deb --fast)
#   LSA_DEB_OUT_DIR          where the .deb goes (default: TARGET/debian)
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

CARGO_DEB_VERSION=3.8.0
profile="${LSA_DEB_PROFILE:-release}"
case "$profile" in
  dev | debug) profile=dev profile_dir=debug ;;
  *) profile_dir="$profile" ;;
esac
target_dir="${CARGO_TARGET_DIR:-$root/target}"
case "$target_dir" in /*) ;; *) target_dir="$root/$target_dir" ;; esac
out_dir="$target_dir/$profile_dir"

log() { printf '== %s\n' "$*" >&2; }

if ! cargo deb --version 2>/dev/null | grep -q "$CARGO_DEB_VERSION"; then
  log "installing cargo-deb $CARGO_DEB_VERSION"
  cargo install --locked cargo-deb --version "$CARGO_DEB_VERSION" >&2
fi

gen_docs="$target_dir/debug/examples/gen-docs"
if [ "${LSA_DEB_NO_BUILD:-}" != 1 ]; then
  log "cargo build --profile $profile --bin landscaper-appliance"
  cargo build --locked -p landscaper-appliance --profile "$profile" --bin landscaper-appliance >&2
  log "cargo build --example gen-docs"
  cargo build --locked -p landscaper-appliance --example gen-docs >&2
fi
for f in "$out_dir/landscaper-appliance" "$gen_docs"; do
  if [ ! -x "$f" ]; then
    echo "build-deb: $f is missing (build it, or unset LSA_DEB_NO_BUILD)" >&2
    exit 1
  fi
done

docs="$out_dir/landscaper-appliance-docs"
log "man pages and completions -> $docs"
rm -rf "$docs"
"$gen_docs" "$docs" >/dev/null
# Debian policy: compressed man pages; -n keeps the .deb reproducible.
gzip -9 -n "$docs"/man/*.1

log "cargo deb"
deb_args=(-p landscaper-appliance --no-build --locked --profile "$profile" -o "${LSA_DEB_OUT_DIR:-$target_dir/debian}/")
if [ "${LSA_DEB_FAST:-}" = 1 ]; then deb_args+=(--fast); fi
deb="$(cargo deb "${deb_args[@]}" | tail -n1)"
if [ ! -f "$deb" ]; then
  echo "build-deb: cargo deb did not report a package file (got: $deb)" >&2
  exit 1
fi
echo "$deb"
