#!/usr/bin/env bash
# Packaging test of landscaper-appliance (run by scripts/test.sh):
#   1. builds the .deb (packaging/build-deb.sh),
#   2. checks the package: files, conffiles, Depends, maintainer scripts (enable, sysusers,
#      tmpfiles, purge), the unit's hardening (`systemd-analyze security`, exposure <= 2.0) and
#      `systemd-analyze verify`,
#   3. installs it into a minimal Debian root (debootstrap --variant=minbase, cached as a
#      tarball) with `chroot ROOT dpkg -i` and checks the binary, the system user, the
#      directories, the unit and its enablement, runs the daemon there as the service user with
#      the packaged configuration, then reinstalls (upgrade: configuration and state kept),
#      removes (data kept) and purges (data and conffile gone).
# Prints `SKIP: <reason>` and exits 0 only when something outside the project is missing (not
# root, no dpkg/systemd-analyze, no network for cargo-deb or debootstrap); every real failure
# exits non-zero. Ends with the duration of each stage.
#
# Environment:
#   CARGO_TARGET_DIR      cargo's target folder (default: ./target)
#   LSA_DEB_PROFILE       profile to package: release (default) or dev; scripts/test.sh uses dev
#                         to reuse the test suite's debug build instead of a release build
#   LSA_DEBOOTSTRAP_CACHE folder for the cached root tarball
#                         (default: /var/cache/landscaper-appliance-packaging-test)
#   LSA_DEBIAN_SUITE      suite of the test root (default: the host's Debian codename, else bookworm)
#   LSA_DEBIAN_MIRROR     mirror (default: http://deb.debian.org/debian)
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

CARGO_DEB_VERSION=3.8.0
MAX_EXPOSURE=2.0
UNIT=landscaper-appliance.service
PKG=landscaper-appliance

profile="${LSA_DEB_PROFILE:-release}"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
case "$target_dir" in /*) ;; *) target_dir="$root/$target_dir" ;; esac
work="$target_dir/packaging-test"
# Not TARGET/debian: the test's package (possibly of the debug build) must not replace a release one.
deb_dir="$target_dir/packaging-test-deb"
cache_dir="${LSA_DEBOOTSTRAP_CACHE:-/var/cache/landscaper-appliance-packaging-test}"
mirror="${LSA_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
suite="${LSA_DEBIAN_SUITE:-}"
if [ -z "$suite" ]; then
  suite="$(. /etc/os-release 2>/dev/null && [ "${ID:-}" = debian ] && echo "${VERSION_CODENAME:-}" || true)"
  suite="${suite:-bookworm}"
fi

# --- reporting ----------------------------------------------------------------------------
test_start=$(date +%s)
stage_name="" stage_start=0 timings=()
stage() {
  stage_end
  stage_name="$1" stage_start=$(date +%s)
  printf '\n== packaging test: %s\n' "$1"
}
stage_end() {
  if [ -n "$stage_name" ]; then
    timings+=("$(printf '%-38s %4ss' "$stage_name" $(($(date +%s) - stage_start)))")
    stage_name=""
  fi
}
report() {
  stage_end
  echo
  echo "packaging test durations:"
  local t
  for t in "${timings[@]}"; do echo "  $t"; done
  printf '  %-38s %4ss\n' total $(($(date +%s) - test_start))
}
skip() {
  echo "SKIP: packaging test: $*"
  report
  exit 0
}
checks=0
ok() { checks=$((checks + 1)); echo "ok: $*"; }
fail() {
  echo "FAIL: packaging test: $*" >&2
  report >&2
  exit 1
}

# --- cleanup: only what this script mounted --------------------------------------------------
mounted=()
daemon_pid=""
cleanup() {
  if [ -n "$daemon_pid" ]; then kill "$daemon_pid" 2>/dev/null || true; fi
  local m
  for m in "${mounted[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
}
trap cleanup EXIT

# --- prerequisites (outside the project) ------------------------------------------------------
for tool in dpkg-deb systemd-analyze; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool is not installed (needs a Debian host with systemd)"
done

stage "cargo-deb $CARGO_DEB_VERSION"
if cargo deb --version 2>/dev/null | grep -q "$CARGO_DEB_VERSION"; then
  echo "cargo-deb $CARGO_DEB_VERSION present"
else
  if ! cargo install --locked cargo-deb --version "$CARGO_DEB_VERSION"; then
    # Not a failure of the project when crates.io is unreachable.
    if ! cargo search --limit 1 cargo-deb >/dev/null 2>&1; then
      skip "cannot install cargo-deb: crates.io is not reachable"
    fi
    fail "cargo install cargo-deb $CARGO_DEB_VERSION failed"
  fi
fi

# --- 1. build ---------------------------------------------------------------------------------
stage "build .deb (profile $profile)"
export CARGO_TARGET_DIR="$target_dir"
if [ "$profile" = dev ] || [ "$profile" = debug ]; then
  # The same feature set as the test suite's `cargo build --workspace --bins`: reuses its
  # build, only gen-docs is compiled and linked.
  cargo build --locked --workspace --bins --example gen-docs
  deb="$(LSA_DEB_PROFILE=dev LSA_DEB_NO_BUILD=1 LSA_DEB_FAST=1 LSA_DEB_OUT_DIR="$deb_dir" packaging/build-deb.sh)" || fail "build-deb.sh failed"
else
  deb="$(LSA_DEB_PROFILE="$profile" LSA_DEB_FAST=1 LSA_DEB_OUT_DIR="$deb_dir" packaging/build-deb.sh)" || fail "build-deb.sh failed"
fi
[ -f "$deb" ] || fail "build-deb.sh printed no .deb path"
echo "package: $deb ($(du -h "$deb" | cut -f1))"
version="$(dpkg-deb -f "$deb" Version)"

# --- 2. the package ---------------------------------------------------------------------------
stage "package contents"
# A root left mounted by an interrupted run: unmount before deleting.
if mountpoint -q "$work/root/proc" 2>/dev/null; then umount "$work/root/proc" || umount -l "$work/root/proc"; fi
rm -rf "$work"
mkdir -p "$work"
info="$(dpkg-deb -I "$deb")"
contents="$(dpkg-deb -c "$deb")"
printf '%s\n' "$info" >"$work/info.txt"
printf '%s\n' "$contents" >"$work/contents.txt"

[ "$(dpkg-deb -f "$deb" Package)" = "$PKG" ] || fail "Package is not $PKG"
depends="$(dpkg-deb -f "$deb" Depends)"
grep -Eq '(^|, )libc6 \(>= [0-9.]+\)' <<<"$depends" || fail "Depends lacks a versioned libc6: $depends"
grep -Eq '(^|, )systemd \| systemd-standalone-sysusers' <<<"$depends" || fail "Depends lacks systemd | systemd-standalone-sysusers: $depends"
grep -Eq '(^|, )procps' <<<"$depends" || fail "Depends lacks procps (kill for ExecReload): $depends"
ok "control: Package $PKG, Version $version, Depends: $depends"

mkdir -p "$work/control" "$work/data"
dpkg-deb -e "$deb" "$work/control"
dpkg-deb -x "$deb" "$work/data"
conffiles="$(cat "$work/control/conffiles")"
[ "$conffiles" = /etc/landscaper-appliance/config.yaml ] || fail "conffiles is not exactly /etc/landscaper-appliance/config.yaml: $conffiles"
ok "conffiles: $conffiles"
for script in postinst prerm postrm; do
  [ -x "$work/control/$script" ] || fail "maintainer script $script missing or not executable"
  sh -n "$work/control/$script" || fail "maintainer script $script has a syntax error"
  ! grep -q '#DEBHELPER#' "$work/control/$script" || fail "$script still contains #DEBHELPER#"
done
need_in() { grep -Fq -- "$2" "$work/control/$1" || fail "$1 lacks: $2"; }
need_in postinst 'systemd-sysusers ${DPKG_ROOT:+--root="$DPKG_ROOT"} landscaper-appliance.conf'
need_in postinst 'systemd-tmpfiles ${DPKG_ROOT:+--root="$DPKG_ROOT"} --create landscaper-appliance.conf'
need_in postinst "deb-systemd-helper enable $UNIT"
need_in postinst "deb-systemd-invoke"
# cargo-deb replaces every #DEBHELPER# (comments too): the generated part must appear once.
[ "$(grep -c "deb-systemd-helper enable $UNIT" "$work/control/postinst")" = 1 ] || fail "postinst holds the generated part more than once"
need_in prerm "deb-systemd-invoke stop $UNIT"
need_in postrm 'if [ "$1" = "purge" ]; then'
need_in postrm 'rm -rf "$DPKG_ROOT/var/lib/landscaper-appliance"'
need_in postrm "deb-systemd-helper purge $UNIT"
ok "maintainer scripts: postinst (sysusers, tmpfiles, enable, start), prerm (stop), postrm (purge removes the state)"

expected_files=(
  ./usr/bin/landscaper-appliance
  "./usr/lib/systemd/system/$UNIT"
  ./usr/lib/sysusers.d/landscaper-appliance.conf
  ./usr/lib/tmpfiles.d/landscaper-appliance.conf
  ./etc/landscaper-appliance/config.yaml
  ./usr/share/doc/landscaper-appliance/copyright
  ./usr/share/doc/landscaper-appliance/README.Debian
  ./usr/share/man/man1/landscaper-appliance.1.gz
  ./usr/share/man/man1/landscaper-appliance-serve.1.gz
  ./usr/share/man/man1/landscaper-appliance-get.1.gz
  ./usr/share/bash-completion/completions/landscaper-appliance
  ./usr/share/zsh/vendor-completions/_landscaper-appliance
  ./usr/share/fish/vendor_completions.d/landscaper-appliance.fish
)
for demo in appliance/demo/*; do
  expected_files+=("./usr/share/doc/landscaper-appliance/examples/$(basename "$demo")")
done
for f in "${expected_files[@]}"; do
  grep -Eq " $(sed 's/[.[\*^$]/\\&/g' <<<"$f")\$" <<<"$contents" || fail "the package lacks $f"
done
grep -Eq '^-rwxr-xr-x (root/root|0/0) .* \./usr/bin/landscaper-appliance$' <<<"$contents" || fail "usr/bin/landscaper-appliance is not 0755 root:root"
for demo in appliance/demo/*; do
  cmp -s "$demo" "$work/data/usr/share/doc/landscaper-appliance/examples/$(basename "$demo")" || fail "examples/$(basename "$demo") differs from $demo"
done
cmp -s systemd/$UNIT "$work/data/usr/lib/systemd/system/$UNIT" || fail "the packaged unit differs from systemd/$UNIT"
cmp -s systemd/config.yaml "$work/data/etc/landscaper-appliance/config.yaml" || fail "the packaged config.yaml differs from systemd/config.yaml"
cmp -s systemd/landscaper-appliance.sysusers "$work/data/usr/lib/sysusers.d/landscaper-appliance.conf" || fail "the packaged sysusers.d file differs"
cmp -s systemd/landscaper-appliance.tmpfiles "$work/data/usr/lib/tmpfiles.d/landscaper-appliance.conf" || fail "the packaged tmpfiles.d file differs"
subcommands="$(ls "$work/data/usr/share/man/man1" | wc -l)"
man_top="$(zcat "$work/data/usr/share/man/man1/landscaper-appliance.1.gz")"
man_serve="$(zcat "$work/data/usr/share/man/man1/landscaper-appliance-serve.1.gz")"
grep -q '^\.SH FILES' <<<"$man_top" || fail "the man page lacks FILES"
grep -q 'manifests' <<<"$man_serve" || fail "the serve man page lacks --manifests"
# The bash completion completes: "landscaper-appliance se<TAB>" -> serve.
bash_completion="$(bash -c 'source "$1"
  COMP_WORDS=(landscaper-appliance se) COMP_CWORD=1 COMP_LINE="landscaper-appliance se" COMP_POINT=23
  complete -p landscaper-appliance | grep -q -- "-F _landscaper__appliance" && _landscaper__appliance landscaper-appliance se landscaper-appliance
  echo "${COMPREPLY[*]}"' _ "$work/data/usr/share/bash-completion/completions/landscaper-appliance" 2>&1)"
[ "$bash_completion" = serve ] || fail "bash completion of 'landscaper-appliance se' gave: $bash_completion"
grep -q '^#compdef landscaper-appliance' "$work/data/usr/share/zsh/vendor-completions/_landscaper-appliance" || fail "zsh completion is not a completion script"
grep -q '^complete -c landscaper-appliance' "$work/data/usr/share/fish/vendor_completions.d/landscaper-appliance.fish" || fail "fish completion is not a completion script"
ok "files: binary, unit, sysusers.d, tmpfiles.d, conffile, $(ls appliance/demo | wc -l) examples, $subcommands man pages, bash/zsh/fish completions"

# --- the unit ---------------------------------------------------------------------------------
stage "systemd-analyze security/verify"
security="$(systemd-analyze security --offline=true --root="$work/data" "$UNIT" 2>&1)" || fail "systemd-analyze security failed: $security"
exposure="$(sed -n 's/^→ Overall exposure level for .*: \([0-9.]*\) .*/\1/p' <<<"$security")"
[ -n "$exposure" ] || fail "no exposure level in: $security"
printf '%s\n' "$security" | grep -v '^✓' | tail -n 12
awk -v e="$exposure" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(e <= m) }' || fail "exposure $exposure > $MAX_EXPOSURE"
# The same verdict through systemd-analyze's own threshold (exposure x 10).
systemd-analyze security --offline=true --threshold=20 --root="$work/data" "$UNIT" >/dev/null 2>&1 \
  || fail "systemd-analyze security --threshold=20 failed (exposure $exposure)"
ok "systemd-analyze security: exposure $exposure (<= $MAX_EXPOSURE)"
# verify against the host's units (the package alone has no sysinit.target), with ExecStart=
# pointing at the packaged binary (verify checks that it is executable).
mkdir -p "$work/unit"
sed "s#^ExecStart=/usr/bin/landscaper-appliance #ExecStart=$work/data/usr/bin/landscaper-appliance #" \
  "$work/data/usr/lib/systemd/system/$UNIT" >"$work/unit/$UNIT"
grep -q "^ExecStart=$work/data/usr/bin/landscaper-appliance " "$work/unit/$UNIT" || fail "no ExecStart=/usr/bin/landscaper-appliance in the unit"
verify="$(systemd-analyze verify --man=no "$work/unit/$UNIT" 2>&1)" || fail "systemd-analyze verify failed: $verify"
[ -z "$verify" ] || fail "systemd-analyze verify warned: $verify"
ok "systemd-analyze verify: clean"

# --- 3. install into a Debian root ------------------------------------------------------------
[ "$(id -u)" = 0 ] || skip "not root: debootstrap and chroot need root (the package checks above passed)"
arch="$(dpkg --print-architecture)"
tarball="$cache_dir/debootstrap-$suite-$arch-minbase-systemd-procps.tar"
chroot_root="$work/root"
stage "Debian root ($suite, minbase)"
if command -v zstd >/dev/null 2>&1; then tar_z=(--zstd) tarball="$tarball.zst"; else tar_z=(--gzip) tarball="$tarball.gz"; fi
if [ -f "$tarball" ]; then
  echo "from cache: $tarball"
  mkdir -p "$chroot_root"
  tar -C "$chroot_root" "${tar_z[@]}" --numeric-owner -xpf "$tarball" || fail "cannot unpack $tarball"
else
  if ! command -v debootstrap >/dev/null 2>&1; then
    echo "installing debootstrap"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap; } >/dev/null 2>&1 \
      || skip "debootstrap is not installed and apt-get cannot install it"
  fi
  release_url="$mirror/dists/$suite/Release"
  if command -v curl >/dev/null 2>&1; then
    curl -fsS --max-time 20 -o /dev/null "$release_url" || skip "$release_url is not reachable (debootstrap needs the mirror)"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -T 20 -O /dev/null "$release_url" || skip "$release_url is not reachable (debootstrap needs the mirror)"
  fi
  ok_root=""
  for attempt in 1 2; do
    rm -rf "$chroot_root"
    # systemd: the package depends on it (systemd-sysusers), and a root with systemd is what the
    # package meets on a real host.
    debootstrap_start=$(date +%s)
    if debootstrap --variant=minbase --include=systemd,procps "$suite" "$chroot_root" "$mirror" >"$work/debootstrap.log" 2>&1; then
      echo "debootstrap: $(($(date +%s) - debootstrap_start))s"
      ok_root=1
      break
    fi
    echo "debootstrap attempt $attempt failed:"
    tail -n 5 "$work/debootstrap.log"
  done
  # A mirror that answers but does not deliver is outside the project too.
  [ -n "$ok_root" ] || skip "debootstrap $suite failed twice (see $work/debootstrap.log)"
  rm -rf "$chroot_root"/var/cache/apt/archives/*.deb "$chroot_root"/var/cache/apt/*.bin "$chroot_root"/var/lib/apt/lists/*
  mkdir -p "$cache_dir"
  tar -C "$chroot_root" "${tar_z[@]}" --numeric-owner -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
  echo "cached: $tarball ($(du -h "$tarball" | cut -f1))"
fi

in_root() { chroot "$chroot_root" "$@"; }
# Only /proc: the daemon reads /proc/self (as under ProcSubset=pid); no /dev, /sys or /run
# from the host, so nothing in the root can reach the host's systemd.
mkdir -p "$chroot_root/proc"
mount -t proc proc "$chroot_root/proc" && mounted+=("$chroot_root/proc")
[ ! -d "$chroot_root/run/systemd/system" ] || fail "the root claims a running systemd"

stage "install, run, upgrade, remove, purge"
cp "$deb" "$chroot_root/tmp/$PKG.deb"
in_root dpkg -i "/tmp/$PKG.deb" >"$work/dpkg-install.log" 2>&1 || { cat "$work/dpkg-install.log"; fail "dpkg -i failed"; }
[ "$(in_root dpkg-query -W -f '${Status}' "$PKG")" = "install ok installed" ] || fail "$PKG is not installed"
ok "chroot dpkg -i: installed $version"

out="$(in_root landscaper-appliance --version)" || fail "landscaper-appliance --version failed"
grep -q "^landscaper-appliance " <<<"$out" || fail "unexpected --version output: $out"
ok "chroot landscaper-appliance --version: $out"

passwd="$(in_root getent passwd landscaper-appliance)" || fail "no user landscaper-appliance"
IFS=: read -r _ _ uid gid _ home shell <<<"$passwd"
[ "$uid" -lt 1000 ] || fail "landscaper-appliance is not a system user: $passwd"
[ "$home" = /var/lib/landscaper-appliance ] || fail "home is not the state directory: $passwd"
case "$shell" in */nologin) ;; *) fail "the user has a login shell: $passwd" ;; esac
[ "$(in_root getent group landscaper-appliance | cut -d: -f3)" = "$gid" ] || fail "group landscaper-appliance is not the user's group"
ok "system user: $passwd"

[ "$(in_root stat -c '%a %U %G' /var/lib/landscaper-appliance)" = "750 landscaper-appliance landscaper-appliance" ] \
  || fail "/var/lib/landscaper-appliance is $(in_root stat -c '%a %U %G' /var/lib/landscaper-appliance)"
[ -d "$chroot_root/etc/landscaper-appliance/manifests.d" ] || fail "/etc/landscaper-appliance/manifests.d missing"
[ -f "$chroot_root/usr/lib/systemd/system/$UNIT" ] || fail "unit file missing"
link="$chroot_root/etc/systemd/system/multi-user.target.wants/$UNIT"
[ -L "$link" ] || fail "enablement symlink $link missing"
case "$(readlink "$link")" in */systemd/system/$UNIT) ;; *) fail "enablement symlink points to $(readlink "$link")" ;; esac
enabled="$(systemctl --root="$chroot_root" is-enabled "$UNIT" 2>&1)" || fail "systemctl is-enabled: $enabled"
[ "$enabled" = enabled ] || fail "the unit is $enabled"
ok "directories (state 0750 landscaper-appliance, manifests.d), unit, enabled (multi-user.target.wants)"

verify="$(systemd-analyze verify --man=no --root="$chroot_root" "$UNIT" 2>&1)" || fail "systemd-analyze verify of the installed unit failed: $verify"
[ -z "$verify" ] || fail "systemd-analyze verify of the installed unit warned: $verify"
systemd-analyze security --offline=true --threshold=20 --root="$chroot_root" "$UNIT" >/dev/null 2>&1 \
  || fail "the installed unit's exposure is above $MAX_EXPOSURE"
ok "systemd-analyze verify/security of the installed unit"

# The daemon as the service user with the packaged config (ephemeral port: the host's network),
# on the packaged examples: the store, the API token and the ingested manifests.
# With strace on the host, its system calls are checked against the unit's SystemCallFilter=
# (systemd cannot run in the chroot, so this stands in for running under the real filter).
cp "$chroot_root"/usr/share/doc/landscaper-appliance/examples/* "$chroot_root/etc/landscaper-appliance/manifests.d/"
tracer=()
if command -v strace >/dev/null 2>&1; then tracer=(strace -f -qq -o "$work/daemon.strace"); fi
"${tracer[@]}" chroot --userspec="$uid:$gid" --groups="$gid" "$chroot_root" /usr/bin/env -i HOME=/var/lib/landscaper-appliance PATH=/usr/bin:/bin \
  landscaper-appliance serve --config /etc/landscaper-appliance/config.yaml --listen 127.0.0.1:0 --log-format json \
  >"$work/daemon.log" 2>&1 &
daemon_pid=$!
tracer_pid=""
if [ ${#tracer[@]} -gt 0 ]; then
  # strace's child that chroot and env turned into the daemon by exec (strace also forks
  # short-lived probes at its start).
  tracer_pid=$daemon_pid daemon_pid=""
  for _ in $(seq 1 100); do
    for child in $(cat "/proc/$tracer_pid/task/$tracer_pid/children" 2>/dev/null); do
      if [ "$(cat "/proc/$child/comm" 2>/dev/null)" = landscaper-appl ]; then daemon_pid=$child; fi
    done
    [ -n "$daemon_pid" ] && break
    kill -0 "$tracer_pid" 2>/dev/null || { cat "$work/daemon.log"; fail "the daemon exited at start"; }
    sleep 0.1
  done
  [ -n "$daemon_pid" ] || { cat "$work/daemon.log"; fail "strace started no daemon"; }
fi
address=""
for _ in $(seq 1 100); do
  # The API's line (the kubeconfig listener logs an address too).
  address="$(grep '"API listening"' "$work/daemon.log" | sed -n 's/.*"address":"\(127\.0\.0\.1:[0-9]*\)".*/\1/p' | sed -n 1p)"
  [ -n "$address" ] && break
  kill -0 "$daemon_pid" 2>/dev/null || { cat "$work/daemon.log"; fail "the daemon exited at start"; }
  sleep 0.1
done
[ -n "$address" ] || { cat "$work/daemon.log"; fail "the daemon did not log its listen address"; }
objects=""
for _ in $(seq 1 100); do
  objects="$(in_root landscaper-appliance get manifestfiles --server "http://$address" 2>/dev/null || true)"
  [ "$(grep -c '\.yaml' <<<"$objects")" -ge "$(ls appliance/demo | wc -l)" ] && break
  sleep 0.1
done
[ "$(grep -c '\.yaml' <<<"$objects")" -ge "$(ls appliance/demo | wc -l)" ] || { cat "$work/daemon.log"; fail "the daemon did not ingest the examples: $objects"; }
kill -TERM "$daemon_pid"
if [ -n "$tracer_pid" ]; then
  # strace exits with the status of the traced daemon.
  wait "$tracer_pid" || { cat "$work/daemon.log"; fail "the daemon did not exit cleanly on SIGTERM"; }
else
  wait "$daemon_pid" || { cat "$work/daemon.log"; fail "the daemon did not exit cleanly on SIGTERM"; }
fi
daemon_pid=""
for f in store.redb api-token; do
  [ "$(in_root stat -c '%U %a' "/var/lib/landscaper-appliance/$f")" = "landscaper-appliance 600" ] || fail "/var/lib/landscaper-appliance/$f is not 0600 landscaper-appliance"
done
ok "daemon as landscaper-appliance: ingested the examples (get manifestfiles via $address), wrote store.redb and api-token, stopped on SIGTERM"

if [ -n "$tracer_pid" ]; then
  # The allowed set: the unit's SystemCallFilter= lines (allow lists, then ~deny lists), groups
  # expanded by systemd-analyze.
  expand_syscalls() {
    local item
    for item in $(systemd-analyze syscall-filter "$1" | sed -n '2,$p' | grep -E '^ +[@a-z0-9_-]+$'); do
      case "$item" in @*) expand_syscalls "$item" ;; *) echo "$item" ;; esac
    done
  }
  allow="" deny=""
  while IFS= read -r value; do
    for item in ${value#\~}; do
      if [ "${value#\~}" != "$value" ]; then deny+=" $item"; else allow+=" $item"; fi
    done
  done < <(sed -n 's/^SystemCallFilter=//p' "$chroot_root/usr/lib/systemd/system/$UNIT")
  [ -n "$allow" ] || fail "the unit has no SystemCallFilter= allow list"
  for item in $allow; do expand_syscalls "$item"; done | sort -u >"$work/syscalls-allow.txt"
  for item in $deny; do expand_syscalls "$item"; done | sort -u >"$work/syscalls-deny.txt"
  comm -23 "$work/syscalls-allow.txt" "$work/syscalls-deny.txt" >"$work/syscalls-effective.txt"
  # The daemon's calls: its own pid after the exec of the binary (before that it was chroot,
  # which switches users), and every thread it started.
  main_pid="$(grep -m1 -E '^[0-9]+ +execve\("/usr/bin/landscaper-appliance"' "$work/daemon.strace" | awk '{print $1}')"
  [ -n "$main_pid" ] || fail "no exec of the daemon in the strace log"
  awk -v main="$main_pid" '
    $1 == main && !started { if ($2 ~ /^execve\("\/usr\/bin\/landscaper-appliance"/) started = 1; next }
    match($2, /^[a-z0-9_]+\(/) { print substr($2, 1, RLENGTH - 1) }
  ' "$work/daemon.strace" | sort -u >"$work/syscalls-used.txt"
  denied="$(comm -23 "$work/syscalls-used.txt" "$work/syscalls-effective.txt" | tr '\n' ' ')"
  [ -z "$denied" ] || fail "the daemon made system calls the unit's SystemCallFilter= denies (EPERM under systemd): $denied"
  ok "system calls: the daemon's $(wc -l <"$work/syscalls-used.txt") distinct calls are all in the unit's SystemCallFilter= ($(wc -l <"$work/syscalls-effective.txt") allowed)"
else
  echo "note: strace is not installed: the daemon's system calls were not checked against SystemCallFilter="
fi

# Upgrade: the same package again; local config changes, data and user stay.
echo "# local change (packaging test)" >>"$chroot_root/etc/landscaper-appliance/config.yaml"
conf_sum="$(sha256sum <"$chroot_root/etc/landscaper-appliance/config.yaml")"
state_sum="$(cd "$chroot_root/var/lib/landscaper-appliance" && sha256sum store.redb api-token)"
in_root dpkg -i "/tmp/$PKG.deb" >"$work/dpkg-upgrade.log" 2>&1 </dev/null || { cat "$work/dpkg-upgrade.log"; fail "reinstalling (upgrade) failed"; }
[ "$(sha256sum <"$chroot_root/etc/landscaper-appliance/config.yaml")" = "$conf_sum" ] || fail "the upgrade changed the modified conffile"
[ "$(cd "$chroot_root/var/lib/landscaper-appliance" && sha256sum store.redb api-token)" = "$state_sum" ] || fail "the upgrade changed the state"
[ "$(in_root getent passwd landscaper-appliance)" = "$passwd" ] || fail "the upgrade changed the user"
[ -L "$link" ] || fail "the upgrade lost the enablement"
ok "upgrade (dpkg -i again): modified config.yaml, store.redb, api-token, user and enablement kept"

# Remove: binary gone, configuration and data kept.
in_root dpkg -r "$PKG" >"$work/dpkg-remove.log" 2>&1 || { cat "$work/dpkg-remove.log"; fail "dpkg -r failed"; }
[ ! -e "$chroot_root/usr/bin/landscaper-appliance" ] || fail "dpkg -r left the binary"
[ -f "$chroot_root/etc/landscaper-appliance/config.yaml" ] || fail "dpkg -r removed the conffile"
[ -f "$chroot_root/var/lib/landscaper-appliance/store.redb" ] || fail "dpkg -r removed the store"
ok "remove (dpkg -r): binary gone; config.yaml and store kept"

# Purge: data and conffile gone, the administrator's manifests kept.
in_root dpkg --purge "$PKG" >"$work/dpkg-purge.log" 2>&1 || { cat "$work/dpkg-purge.log"; fail "dpkg --purge failed"; }
[ ! -e "$chroot_root/var/lib/landscaper-appliance" ] || fail "purge left /var/lib/landscaper-appliance"
[ ! -e "$chroot_root/etc/landscaper-appliance/config.yaml" ] || fail "purge left the conffile"
[ ! -e "$link" ] && [ ! -e "$chroot_root/etc/systemd/system/$UNIT" ] || fail "purge left the enablement or mask symlink"
[ "$(ls "$chroot_root/etc/landscaper-appliance/manifests.d" | wc -l)" = "$(ls appliance/demo | wc -l)" ] || fail "purge removed the administrator's manifests"
[ -z "$(in_root dpkg-query -W -f '${Status}' "$PKG" 2>/dev/null | grep -v 'not-installed' || true)" ] || fail "dpkg still knows $PKG"
ok "purge (dpkg --purge): /var/lib/landscaper-appliance and config.yaml removed, enablement removed, manifests kept"

# The root is 250 MB; the logs stay in $work.
cleanup
mounted=()
if ! mountpoint -q "$chroot_root/proc"; then rm -rf "$chroot_root"; fi
echo
echo "packaging test passed ($checks checks; exposure $exposure; package $(basename "$deb"))"
report
