#!/usr/bin/env bash
# Installs what the build needs, from Debian only, and unpacks Debian's source package of
# cpp-httplib (with Debian's patches) into the build folder, so the binary can be static.
#   scripts/deps.sh BUILD_DIR
# Idempotent: does nothing when everything is already there.
set -euo pipefail
build=${1:-build}
packages=(g++ make libssl-dev libyaml-dev picojson-dev catch2 dpkg-dev openssl ca-certificates file xz-utils
          btrfs-progs xfsprogs e2fsprogs)  # the last three: filesystems for the quota tests

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian ships cpp-httplib as a split header + shared library; its source package has the
# header-only httplib.h. Fetch it with a deb-src list of our own, leaving the system's alone.
if [ ! -f "$build/httplib/httplib.h" ]; then
  apt_dir=$(realpath -m "$build/apt")
  mkdir -p "$apt_dir/lists/partial" "$build/httplib"
  cat > "$apt_dir/sources.list" <<LIST
deb-src http://deb.debian.org/debian bookworm main
deb-src http://deb.debian.org/debian-security bookworm-security main
LIST
  opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
        -o "Dir::State::Lists=$apt_dir/lists" -o "APT::Sandbox::User=root")
  apt-get "${opts[@]}" update -qq
  (cd "$apt_dir" && rm -rf cpp-httplib-* && apt-get "${opts[@]}" source -qq cpp-httplib >/dev/null)
  cp "$apt_dir"/cpp-httplib-*/httplib.h "$build/httplib/httplib.h"
  cp "$apt_dir"/cpp-httplib-*/LICENSE "$build/httplib/LICENSE"
  echo "deps: httplib.h from Debian source $(ls -d "$apt_dir"/cpp-httplib-*/ | xargs basename)" >&2
fi
