#!/usr/bin/env bash
# Installs what a build for another architecture needs, from Debian only:
#   scripts/cross-deps.sh ARCH SYSROOT      ARCH: arm64 | armv7
# - the cross compiler and qemu-user-static (host packages, apt-get install), and
# - the target's libraries and headers (libssl, libyaml, picojson, catch2) unpacked into
#   SYSROOT with apt-get download + dpkg-deb -x, through apt state of its own (the machine's
#   sources, the target architecture, lists under SYSROOT/apt). The system's dpkg learns no
#   foreign architecture, so a stale foreign index can never break the machine's own apt-get
#   update (or the amd64 build), and no version has to match the installed amd64 packages.
# Idempotent: does nothing when SYSROOT/.complete exists and the host packages are installed.
# Exits 1 with the package and apt's reason when something cannot be had.
set -euo pipefail
arch=${1:?usage: cross-deps.sh arm64|armv7 SYSROOT} sysroot=${2:?usage: cross-deps.sh arm64|armv7 SYSROOT}
case $arch in
  arm64) debarch=arm64 triplet=aarch64-linux-gnu qemu=qemu-aarch64-static ;;
  armv7) debarch=armhf triplet=arm-linux-gnueabihf qemu=qemu-arm-static ;;
  *) echo "cross-deps: unknown ARCH '$arch' (arm64 or armv7)" >&2; exit 2 ;;
esac
host_packages=("g++-$triplet" qemu-user-static)
target_packages=(libssl-dev libssl3 libyaml-dev libyaml-0-2 picojson-dev catch2)

missing=()
for p in "${host_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "cross-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || echo "cross-deps: apt-get update reported errors; trying with the lists it has" >&2
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || { echo "cross-deps: cannot install ${missing[*]} (see apt's message above)" >&2; exit 1; }
fi

[ -f "$sysroot/.complete" ] && exit 0
apt_dir=$(realpath -m "$sysroot/apt")
rm -rf "$sysroot" && mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$apt_dir/debs"
opts=(-o "APT::Architecture=$debarch" -o "APT::Architectures::=$debarch"
      -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir" -o "Dir::State::status=/dev/null"
      -o "APT::Sandbox::User=root")
# A foreign index out of step with its mirror (seen with armhf security updates) fails the
# update; the lists that did arrive still serve, and a package missing from them is named below.
apt-get "${opts[@]}" update -qq 2>"$apt_dir/update.err" \
  || echo "cross-deps: apt-get update for $debarch reported errors (using the lists it has): $(tr '\n' ' ' < "$apt_dir/update.err")" >&2
for p in "${target_packages[@]}"; do
  (cd "$apt_dir/debs" && apt-get "${opts[@]}" download -qq "$p" >/dev/null 2>"$apt_dir/download.err") || {
    echo "cross-deps: cannot download $p for $debarch: $(tr '\n' ' ' < "$apt_dir/download.err")" >&2
    exit 1
  }
done
for deb in "$apt_dir"/debs/*.deb; do dpkg-deb -x "$deb" "$sysroot"; done
echo "cross-deps: $debarch sysroot in $sysroot: $(cd "$apt_dir/debs" && ls | sed 's/_[^_]*$//' | tr '\n' ' ')" >&2
touch "$sysroot/.complete"
