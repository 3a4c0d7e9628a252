#!/usr/bin/env bash
# Builds and checks loopr's Debian package (issue 14), as CI's "Debian
# package" stage (scripts/test.sh) does after the normal build:
#   1. cpack -G DEB from BUILD_DIR (the install rules of packaging/);
#   2. lintian on the .deb: any error fails (warnings are printed; those loopr
#      accepts are overridden with a reason in packaging/lintian-overrides),
#      and so does any hardening-* tag, info-level ones included (the build's
#      LOOPR_HARDENING flags: fortify, bind-now, relro; PIE is the
#      compiler's default). hardening-no-fortify-functions can be a false
#      positive for a binary with no call fortify could check: override it
#      then, with that reason;
#   3. the package unpacked into a clean, empty root: the files are exactly
#      the expected ones, the units name the installed looprd, and
#      `looprd --version` and `looprctl --version` run from there;
#   4. `apt-get install ./loopr_*.deb` on this machine: `systemd-analyze
#      --user verify` on the installed units, looprd --version from /usr/bin;
#      then `apt-get purge loopr` and nothing of the package is left.
# Usage (as root, on a throwaway or development machine):
#   scripts/check-package.sh [BUILD_DIR]        (default: build)
# The machine is restored whatever happens: the package is purged on exit,
# even after a failure (trap). A loopr package installed beforehand is not
# this script's to remove: it refuses to run then.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
fail() {
  echo "check-package: FAIL: $*" >&2
  exit 1
}
say() { echo "check-package: $*"; }

[ "$(id -u)" -eq 0 ] || fail "run me as root: I install and purge the package (apt-get)"
[ -f "$build/CPackConfig.cmake" ] || fail "$build/CPackConfig.cmake is missing; configure and build first (scripts/build.sh)"
for tool in cpack lintian dpkg-deb dpkg-shlibdeps systemd-analyze apt-get; do
  command -v "$tool" >/dev/null || fail "$tool is missing; run scripts/install-deps.sh"
done
if dpkg-query -W -f='${Status}' loopr 2>/dev/null | grep -q 'installed'; then
  fail "a loopr package is already installed here; remove it first (apt-get purge loopr)"
fi

work=$(mktemp -d /tmp/loopr-package.XXXXXX)
installed=false
cleanup() {
  local status=$?
  if $installed || dpkg-query -W -f='${Status}' loopr 2>/dev/null | grep -q 'installed'; then
    say "purging loopr (restoring the machine)"
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq loopr >/dev/null 2>&1 ||
      dpkg --purge loopr >/dev/null 2>&1 || echo "check-package: could not purge loopr" >&2
  fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT

# ---- 1. the package
say "cpack -G DEB from $build"
(cd "$build" && cpack -G DEB -B "$work/out" >"$work/cpack.log" 2>&1) ||
  { cat "$work/cpack.log" >&2; fail "cpack failed"; }
shopt -s nullglob
debs=("$work"/out/loopr_*.deb)
[ ${#debs[@]} -eq 1 ] || fail "expected one loopr_*.deb from cpack, got ${#debs[@]}"
deb=${debs[0]}
version=$(dpkg-deb -f "$deb" Version)
say "built $(basename "$deb") ($(du -h "$deb" | cut -f1))"
dpkg-deb -f "$deb" Package Version Architecture Depends | sed 's/^/  /'
dpkg-deb -f "$deb" Depends | grep -q 'libc6' || fail "Depends has no libc6: shlibs were not computed"
dpkg-deb -f "$deb" Depends | grep -q 'git' || fail "Depends lacks git"

# ---- 2. lintian
say "lintian"
# --allow-root: CI runs as root (lintian would only warn). --fail-on error
# makes any error tag not overridden fail the run; warnings are printed.
if ! lintian --allow-root --fail-on error "$deb" \
  >"$work/lintian.log" 2>&1; then
  cat "$work/lintian.log" >&2
  fail "lintian reports errors"
fi
sed 's/^/  /' "$work/lintian.log"
# Info-level tags are not shown by default: ask for them, and fail on any
# about hardening (a binary built without LOOPR_HARDENING's flags).
lintian --allow-root --display-info "$deb" >"$work/lintian-info.log" 2>&1 || true
if grep -E 'hardening-' "$work/lintian-info.log" >"$work/hardening.log"; then
  cat "$work/hardening.log" >&2
  fail "lintian finds binaries built without the hardening flags (LOOPR_HARDENING)"
fi
say "lintian: no hardening-* tags"

# ---- 3. a clean root: only the package's files
say "unpacking into a clean root"
root=$work/root
mkdir "$root"
dpkg-deb -x "$deb" "$root"
expected="/usr/bin/loopr-fetch
/usr/bin/loopr-runner
/usr/bin/loopr-tool
/usr/bin/loopr-tui
/usr/bin/looprctl
/usr/bin/looprd
/usr/lib/systemd/user/looprd.service
/usr/lib/systemd/user/looprd.socket
/usr/share/doc/loopr/README.md
/usr/share/doc/loopr/catalog.example.toml
/usr/share/doc/loopr/changelog.gz
/usr/share/doc/loopr/copyright
/usr/share/doc/loopr/loopr.example.toml
/usr/share/lintian/overrides/loopr
/usr/share/man/man1/loopr-tui.1.gz
/usr/share/man/man1/looprctl.1.gz
/usr/share/man/man1/looprd.1.gz"
actual=$(cd "$root" && find . -type f -o -type l | sed 's|^\.||' | LC_ALL=C sort)
if [ "$actual" != "$expected" ]; then
  diff <(echo "$expected") <(echo "$actual") >&2 || true
  fail "the package's files are not the expected ones (- expected, + packed)"
fi
for binary in looprd looprctl loopr-tui loopr-runner loopr-tool loopr-fetch; do
  [ -x "$root/usr/bin/$binary" ] || fail "/usr/bin/$binary is not executable"
done
grep -qx 'ExecStart=/usr/bin/looprd --foreground' "$root/usr/lib/systemd/user/looprd.service" ||
  fail "looprd.service does not start /usr/bin/looprd"
grep -qx 'ListenStream=%t/loopr/looprd.sock' "$root/usr/lib/systemd/user/looprd.socket" ||
  fail "looprd.socket does not listen on %t/loopr/looprd.sock"
! grep -rq "$PWD\|/usr/local" "$root/usr/lib/systemd/user" ||
  fail "a unit names the build tree or /usr/local"
for binary in looprd looprctl; do
  out=$("$root/usr/bin/$binary" --version) || fail "$binary --version failed (from the clean root)"
  [ "$out" = "$binary ${version%%-*}" ] || fail "$binary --version printed '$out', not '$binary $version'"
done
say "files, units and --version from the clean root: ok"

# ---- 4. apt install, the installed units, purge
say "apt-get install ./$(basename "$deb")"
cp "$deb" "$work/apt.deb"
chmod 0644 "$work/apt.deb"
chmod 0755 "$work"
installed=true
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$work/apt.deb" >"$work/apt.log" 2>&1 ||
  { cat "$work/apt.log" >&2; fail "apt-get install failed"; }
[ "$(/usr/bin/looprd --version)" = "looprd ${version%%-*}" ] || fail "/usr/bin/looprd --version"
# Offline, as the user manager would load them; needs only a runtime folder.
mkdir -m 0700 "$work/xdg"
# It says nothing about good units; an unknown key is only a message (exit 0),
# so any message fails the check too.
if ! XDG_RUNTIME_DIR=$work/xdg systemd-analyze --user verify --man=no \
  /usr/lib/systemd/user/looprd.service /usr/lib/systemd/user/looprd.socket >"$work/verify.log" 2>&1 ||
  [ -s "$work/verify.log" ]; then
  cat "$work/verify.log" >&2
  fail "systemd-analyze verify rejects the installed units"
fi
say "systemd-analyze --user verify: ok"
# Socket activation by systemd's own code (systemd-socket-activate, as
# looprd.socket would): it listens, and on the first looprctl call starts the
# installed looprd with the socket as fd 3; looprctl gets its answer.
act=$work/activation
mkdir -m 0700 "$act" "$act/run" "$act/config" "$act/state" "$act/work"
printf '[sandbox]\nworktree_roots = ["%s"]\n' "$act/work" >"$act/config/loopr.toml"
timeout 60 systemd-socket-activate -l "$act/run/looprd.sock" \
  /usr/bin/looprd --foreground --config-dir "$act/config" --state-dir "$act/state" \
  >"$act/looprd.log" 2>&1 &
activator=$!
for _ in $(seq 100); do [ -S "$act/run/looprd.sock" ] && break; sleep 0.05; done
looprctl_args=(--socket "$act/run/looprd.sock" --config-dir "$act/config" --state-dir "$act/state")
if ! status=$(timeout 30 /usr/bin/looprctl "${looprctl_args[@]}" daemon status 2>&1) ||
  ! grep -q "is running on $act/run/looprd.sock" <<<"$status" ||
  ! grep -q "socket activation: serving $act/run/looprd.sock" "$act/looprd.log"; then
  echo "$status" >&2
  cat "$act/looprd.log" >&2
  kill "$activator" 2>/dev/null || true
  fail "looprd socket-activated by systemd-socket-activate did not answer looprctl"
fi
timeout 30 /usr/bin/looprctl "${looprctl_args[@]}" daemon stop >/dev/null 2>&1 || kill "$activator" 2>/dev/null || true
wait "$activator" || true
say "socket activation (systemd-socket-activate, installed looprd and looprctl): ok"
files=$(dpkg -L loopr)
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq loopr >"$work/apt.log" 2>&1 ||
  { cat "$work/apt.log" >&2; fail "apt-get purge failed"; }
installed=false
if dpkg-query -W -f='${Status}' loopr 2>/dev/null | grep -q 'installed\|config-files'; then
  fail "loopr is still known to dpkg after purge"
fi
left=()
while IFS= read -r path; do
  if [ -f "$path" ] || [ -L "$path" ]; then left+=("$path"); fi
done <<<"$files"
if [ -e /usr/share/doc/loopr ]; then left+=(/usr/share/doc/loopr); fi
[ ${#left[@]} -eq 0 ] || fail "purge left: ${left[*]}"
say "apt-get purge: nothing left"
say "ok: $(basename "$deb")"
