#!/usr/bin/env bash
# A first run on a fresh Debian 12 machine (issue 26): the README's run
# command, scripts/demo.sh, in a Debian 12 system that has nothing but
# debootstrap's minbase — no compiler, no cmake, no git — so the figure the
# demo prints ("first tool call N min after the demo started: packages, build,
# start") includes installing every package building and running need from
# Debian's mirror, as on a new machine.
#
#   bench/first_run_fresh.sh [FOLDER]     (root; default /var/tmp/loopr-fresh)
#
# FOLDER/pristine is made once with `debootstrap --variant=minbase bookworm`
# from deb.debian.org (bookworm, bookworm-updates and bookworm-security, as a
# Debian 12 machine has them; the host's own apt sources are not used); each run
# copies it to FOLDER/trial, clones this checkout's HEAD into /root/loopr
# there, and runs the demo inside it: a mount namespace whose root is the
# trial (pivot_root, not chroot, so the sandbox's own namespaces work as on a
# machine), with /proc, /dev, /sys and the host's resolv.conf. The host's
# kernel, cores and memory are the machine's; nothing of the host's /usr is
# seen. Prints the demo's output to FOLDER/trial.log and its first-call line.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "first_run_fresh: needs root (debootstrap, mount namespaces)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "first_run_fresh: needs debootstrap (apt-get install debootstrap)" >&2; exit 1; }
folder=${1:-/var/tmp/loopr-fresh}
mkdir -p "$folder"
folder=$(realpath "$folder")
if [ ! -f "$folder/pristine/.loopr-complete" ]; then
  rm -rf "$folder/pristine"
  started=$SECONDS
  debootstrap --variant=minbase bookworm "$folder/pristine" http://deb.debian.org/debian >"$folder/debootstrap.log"
  touch "$folder/pristine/.loopr-complete"
  echo "first_run_fresh: a minbase Debian 12 in $((SECONDS - started)) s (not part of the figure)"
fi
trial=$folder/trial
rm -rf "$trial"
cp -a "$folder/pristine" "$trial"
rm -f "$trial/.loopr-complete"
# A Debian 12 machine's sources: the release, its updates and its security
# fixes, signed by the archive keys debootstrap installed.
rm -f "$trial/etc/apt/sources.list"
cat > "$trial/etc/apt/sources.list.d/debian.sources" <<'SOURCES'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
git clone -q --no-hardlinks "$PWD" "$trial/root/loopr"
echo "first_run_fresh: running scripts/demo.sh in a fresh Debian 12 ($(git rev-parse --short HEAD)), $(nproc) cores"
# The demo's failure must not end this script before its summary below.
set +e
unshare --mount --fork /bin/bash -s "$trial" <<'INSIDE' 2>&1 | tee "$folder/trial.log"
set -euo pipefail
root=$1
mount --make-rprivate /
mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount --rbind /sys "$root/sys"
mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
cd "$root"
mkdir -p .old-root
pivot_root . .old-root
cd /
umount -l /.old-root
rmdir /.old-root
exec /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  /bin/bash -c 'cd /root/loopr && scripts/demo.sh'
INSIDE
status=${PIPESTATUS[0]}
set -e
echo
grep -m1 '^(first tool call' "$folder/trial.log" || echo "first_run_fresh: the demo printed no first-call line"
echo "first_run_fresh: the demo exited $status (log: $folder/trial.log)"
exit "$status"
