#!/usr/bin/env bash
# Builds a container image archive without a daemon, from static binaries:
#   bash scripts/oci-image.sh BINARY... OUT.tar NAME[:TAG]
#
# Each image has one layer holding its BINARY as /hostpath-provisioner (mode 0755, root:root),
# whatever it is called on disk, and runs it as its entrypoint, as user 0. Its platform comes
# from the binary's ELF header: linux/amd64, linux/arm64 or linux/arm/v7.
# With one BINARY, OUT.tar is at the same time
#   - an OCI image layout (oci-layout, index.json, blobs/sha256/...), named through index.json's
#     annotations so `ctr images import` / `k3s ctr images import` know it as
#     docker.io/library/NAME:TAG (or the NAME's own registry), and
#   - a `docker save` archive (manifest.json with Config, RepoTags, Layers), so `docker load`
#     and `podman load` accept it.
# With several (one per platform), OUT.tar is a multi-platform OCI image layout: index.json
# names one image index blob, which lists a manifest per platform (as `docker buildx` writes
# them; `ctr images import --all-platforms` keeps all, plain `ctr images import` the host's).
# It has no docker manifest.json: that format holds one platform per tag.
# Same inputs give a byte-identical archive: fixed order, owners, modes and times (mtime 0, or
# $SOURCE_DATE_EPOCH if set), gzip without name or time.
# Needs only bash, coreutils, tar and gzip. Prints the image reference and the archive's size.
# Exits 2 on bad arguments (nothing written), 1 on any other failure (OUT.tar left untouched).
set -euo pipefail
export LC_ALL=C

die() { echo "oci-image: $1" >&2; exit "${2:-1}"; }
usage() { die "usage: oci-image.sh BINARY... OUT.tar NAME[:TAG]" 2; }

[ $# -ge 3 ] || usage
binaries=("${@:1:$#-2}") out=${*: -2:1} ref=${*: -1}
for binary in "${binaries[@]}"; do
  [ -f "$binary" ] || die "binary '$binary' is not a file" 2
done
[ -d "$(dirname -- "$out")" ] || die "folder of '$out' does not exist" 2
[ ! -d "$out" ] || die "'$out' is a folder, not an archive name" 2
epoch=${SOURCE_DATE_EPOCH:-0}
[[ $epoch =~ ^[0-9]+$ ]] || die "SOURCE_DATE_EPOCH must be a number of seconds" 2

# --- the reference: NAME[:TAG], NAME = [REGISTRY/]PATH, as Docker's reference grammar allows
component='[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*'
registry='[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*(:[0-9]+)?'
name=$ref tag=latest
if [[ ${ref##*/} == *:* ]]; then  # a ':' after the last '/' starts the tag
  name=${ref%:*} tag=${ref##*:}
fi
[[ $tag =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || die "invalid tag '$tag' in '$ref'" 2
first=${name%%/*}
if [[ $name == */* && ( $first == *.* || $first == *:* || $first == localhost ) ]]; then
  [[ $first =~ ^$registry$ ]] || die "invalid registry '$first' in '$ref'" 2
  path=${name#*/} full_name=$name                 # registry.example:5000/team/app
elif [[ $name == */* ]]; then
  path=$name full_name=docker.io/$name            # team/app
else
  path=$name full_name=docker.io/library/$name    # app
fi
[[ $path =~ ^$component(/$component)*$ ]] || die "invalid image name '$name' in '$ref'" 2
[ ${#name} -le 255 ] || die "image name '$name' is longer than 255 characters" 2

# --- the platform, read from the ELF header: class at byte 4, e_machine at 18 (little-endian)
platform_of() {
  [ "$(head -c 4 "$1" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ] || die "'$1' is not an ELF executable" 2
  local class machine
  class=$(od -An -tu1 -j4 -N1 "$1" | tr -d ' \n')
  machine=$(od -An -tu2 -j18 -N2 "$1" | tr -d ' \n')
  case $class:$machine in
    2:62) echo amd64 ;;
    2:183) echo arm64 ;;
    1:40) echo arm/v7 ;;
    *) die "'$1' is for ELF machine $machine (class $class), not x86-64, aarch64 or 32-bit ARM" 2 ;;
  esac
}
platforms=()
for binary in "${binaries[@]}"; do
  platform=$(platform_of "$binary") || exit 2
  [[ " ${platforms[*]} " != *" $platform "* ]] || die "two binaries for linux/$platform" 2
  platforms+=("$platform")
done

work=$(mktemp -d) tmp_out=
trap 'rm -rf "$work" ${tmp_out:+"$tmp_out"}' EXIT
umask 022
blobs=$work/image/blobs/sha256
mkdir -p "$work/layer" "$blobs"

sha256() { sha256sum "$1" | cut -d' ' -f1; }
size() { wc -c < "$1" | tr -d ' '; }
# Moves FILE into blobs/sha256/<its digest> and prints the digest (hex only).
add_blob() {
  local digest; digest=$(sha256 "$1")
  mv "$1" "$blobs/$digest"
  echo "$digest"
}
# Deterministic tar: byte order of names, fixed owner and time, no pax headers.
det_tar() {
  tar --format=ustar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner "$@"
}

created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
names_json="\"annotations\":{\"io.containerd.image.name\":\"$full_name:$tag\",\"org.opencontainers.image.ref.name\":\"$tag\"}"
descriptors=()  # one manifest descriptor per platform, with its platform
for n in "${!binaries[@]}"; do
  binary=${binaries[n]} arch=${platforms[n]%/*} variant=
  [[ ${platforms[n]} == */* ]] && variant=${platforms[n]#*/}

  # --- the layer: /hostpath-provisioner, 0755, root:root
  rm -rf "$work/layer" && mkdir "$work/layer"
  cp -- "$binary" "$work/layer/hostpath-provisioner"
  chmod 0755 "$work/layer/hostpath-provisioner"
  det_tar -C "$work/layer" -cf "$work/layer.tar" hostpath-provisioner
  diff_id=$(sha256 "$work/layer.tar")
  gzip -n -9 -c "$work/layer.tar" > "$work/layer.tar.gz"
  layer_size=$(size "$work/layer.tar.gz")
  layer=$(add_blob "$work/layer.tar.gz")

  # --- the image config
  printf '%s' "{\"architecture\":\"$arch\",${variant:+\"variant\":\"$variant\",}\"os\":\"linux\",\"created\":\"$created\",\
\"config\":{\"User\":\"0\",\"Entrypoint\":[\"/hostpath-provisioner\"],\"WorkingDir\":\"/\"},\
\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:$diff_id\"]},\
\"history\":[{\"created\":\"$created\",\"created_by\":\"scripts/oci-image.sh: COPY hostpath-provisioner /\"}]}" \
    > "$work/config.json"
  config_size=$(size "$work/config.json")
  config=$(add_blob "$work/config.json")

  # --- the OCI manifest
  printf '%s' "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\
\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"sha256:$config\",\"size\":$config_size},\
\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"sha256:$layer\",\"size\":$layer_size}]}" \
    > "$work/manifest.json"
  manifest_size=$(size "$work/manifest.json")
  manifest=$(add_blob "$work/manifest.json")
  descriptors+=("{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:$manifest\",\"size\":$manifest_size,\
\"platform\":{\"architecture\":\"$arch\",\"os\":\"linux\"${variant:+,\"variant\":\"$variant\"}}}")
done

image=$work/image
files=(blobs index.json)
if [ ${#binaries[@]} -eq 1 ]; then
  # index.json names the one manifest; docker load's manifest.json (it unpacks gzipped layers itself)
  printf '%s' "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\
\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:$manifest\",\"size\":$manifest_size,\
$names_json}]}" > "$image/index.json"
  printf '%s' "[{\"Config\":\"blobs/sha256/$config\",\"RepoTags\":[\"$name:$tag\"],\
\"Layers\":[\"blobs/sha256/$layer\"]}]" > "$image/manifest.json"
  files+=(manifest.json)
  summary="$arch) manifest sha256:$manifest"
else
  # an image index blob listing the platforms; index.json names it
  list=$(IFS=,; echo "${descriptors[*]}")
  printf '%s' "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"manifests\":[$list]}" \
    > "$work/platforms.json"
  platforms_size=$(size "$work/platforms.json")
  platforms_index=$(add_blob "$work/platforms.json")
  printf '%s' "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\
\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"digest\":\"sha256:$platforms_index\",\"size\":$platforms_size,\
$names_json}]}" > "$image/index.json"
  summary="$(IFS=,; echo "${platforms[*]}")) index sha256:$platforms_index"
fi
printf '%s' '{"imageLayoutVersion":"1.0.0"}' > "$image/oci-layout"
files+=(oci-layout)

# --- the archive, written beside OUT and renamed into place
chmod 0644 "$blobs"/* "$image"/*.json "$image/oci-layout"
chmod 0755 "$image/blobs" "$blobs"
tmp_out=$(mktemp "$out.XXXXXX")
det_tar -C "$image" -cf "$tmp_out" "${files[@]}"
chmod 0644 "$tmp_out"
mv -f -- "$tmp_out" "$out"
tmp_out=

echo "image $name:$tag ($full_name:$tag, $summary"
echo "archive $out: $(size "$out") bytes"
