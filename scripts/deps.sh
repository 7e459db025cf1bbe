#!/usr/bin/env bash
# Installs what the build needs, from Debian only, and unpacks Debian's source package of
# cpp-httplib (with Debian's patches) into the build folder, so the binary can be static.
#   scripts/deps.sh BUILD_DIR
#   scripts/deps.sh --deb-src   only prints the deb-src entries it would use (see DebSrc)
# Idempotent: does nothing when everything is already there.
set -euo pipefail

# Prints, once each, a deb-src entry with `main` for every Debian suite the machine installs
# from: each URI and suite of its `deb` entries (one-line format in sources.list and
# sources.list.d/*.list, deb822 format in sources.list.d/*.sources) whose suite is the
# release's codename or codename-SOMETHING and whose components include main, keeping the
# entry's options (deb822: Signed-By when it names files or fingerprints, Trusted). So the
# source package comes from the machine's own mirror or proxy. Nothing if there is none.
# APT_ETC (default /etc/apt) and DEBIAN_CODENAME (default VERSION_CODENAME in /etc/os-release)
# are for tests.
DebSrc() {
  local etc=${APT_ETC:-/etc/apt} codename=${DEBIAN_CODENAME:-}
  [ -n "$codename" ] || codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
  [ -n "$codename" ] || return 0
  local lists=() sources=() f
  [ -f "$etc/sources.list" ] && lists+=("$etc/sources.list")
  for f in "$etc"/sources.list.d/*.list; do [ -f "$f" ] && lists+=("$f"); done
  for f in "$etc"/sources.list.d/*.sources; do [ -f "$f" ] && sources+=("$f"); done
  local emit='
    function emit(opts, uri, suite, components) {
      if ((suite == codename || index(suite, codename "-") == 1) && (" " components " ") ~ /[ \t\n]main[ \t\n]/)
        print "deb-src " (opts == "" ? "" : opts " ") uri " " suite " main"
    }'
  {
    # One-line: deb [ options ] URI SUITE COMPONENT...; "#" starts a comment.
    [ ${#lists[@]} -eq 0 ] || awk -v codename="$codename" "$emit"'
      { sub(/#.*/, "") }
      $1 != "deb" { next }
      {
        i = 2; opts = ""
        if ($i ~ /^\[/) {
          opts = $i
          while ($i !~ /\]$/ && i < NF) { i++; opts = opts " " $i }
          i++
        }
        components = ""
        for (j = i + 2; j <= NF; j++) components = components " " $j
        emit(opts, $i, $(i + 1), components)
      }' "${lists[@]}"
    # deb822: stanzas apart by blank lines, "Field: value", continuation lines indented.
    [ ${#sources[@]} -eq 0 ] || awk -v codename="$codename" "$emit"'
      BEGIN { RS = "" }
      {
        split("", field); key = ""
        n = split($0, line, "\n")
        for (k = 1; k <= n; k++) {
          if (line[k] ~ /^#/) continue
          if (line[k] ~ /^[ \t]/) { if (key != "") field[key] = field[key] "\n" line[k]; continue }
          c = index(line[k], ":")
          if (c == 0) continue
          key = tolower(substr(line[k], 1, c - 1))
          field[key] = substr(line[k], c + 1)
        }
        if (tolower(field["enabled"]) ~ /no/ || (" " field["types"] " ") !~ /[ \t\n]deb[ \t\n]/) next
        opts = ""
        signed = field["signed-by"]
        gsub(/^[ \t]+|[ \t]+$/, "", signed)
        if (signed != "" && signed !~ /\n/) { gsub(/[ \t]+/, ",", signed); opts = "signed-by=" signed }
        if (tolower(field["trusted"]) ~ /yes/) opts = opts (opts == "" ? "" : " ") "trusted=yes"
        if (opts != "") opts = "[" opts "]"
        nu = split(field["uris"], uri)
        ns = split(field["suites"], suite)
        for (u = 1; u <= nu; u++)
          for (s = 1; s <= ns; s++) emit(opts, uri[u], suite[s], field["components"])
      }' "${sources[@]}"
  } | awk '!seen[$0]++'
}

if [ "${1:-}" = --deb-src ]; then
  DebSrc
  exit 0
fi

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
  DebSrc > "$apt_dir/sources.list"
  if [ ! -s "$apt_dir/sources.list" ]; then
    echo "deps: no Debian source in ${APT_ETC:-/etc/apt}/sources.list or sources.list.d/: need a deb entry" \
         "(one-line .list or deb822 .sources) for this release's suite (e.g. bookworm) with component main" >&2
    exit 1
  fi
  opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
        -o "Dir::State::Lists=$apt_dir/lists" -o "APT::Sandbox::User=root")
  apt-get "${opts[@]}" update -qq
  (cd "$apt_dir" && rm -rf cpp-httplib-* && apt-get "${opts[@]}" source -qq cpp-httplib >/dev/null)
  cp "$apt_dir"/cpp-httplib-*/httplib.h "$build/httplib/httplib.h"
  cp "$apt_dir"/cpp-httplib-*/LICENSE "$build/httplib/LICENSE"
  echo "deps: httplib.h from Debian source $(ls -d "$apt_dir"/cpp-httplib-*/ | xargs basename)" >&2
fi
