#!/usr/bin/env bash
# Builds a container image archive without a daemon, from one static binary:
#   bash scripts/oci-image.sh BINARY OUT.tar NAME[:TAG]
#
# The image has one layer holding BINARY as /hostpath-provisioner (mode 0755, root:root), whatever
# it is called on disk, and runs it as its entrypoint, as user 0.
# OUT.tar is at the same time
#   - an OCI image layout (oci-layout, index.json, blobs/sha256/...), named through index.json's
#     annotations so `ctr images import` / `k3s ctr images import` know it as
#     docker.io/library/NAME:TAG (or the NAME's own registry), and
#   - a `docker save` archive (manifest.json with Config, RepoTags, Layers), so `docker load`
#     and `podman load` accept it.
# Same inputs give a byte-identical archive: fixed order, owners, modes and times (mtime 0, or
# $SOURCE_DATE_EPOCH if set), gzip without name or time.
# Needs only bash, coreutils, tar and gzip. Prints the image reference and the archive's size.
# Exits 2 on bad arguments (nothing written), 1 on any other failure (OUT.tar left untouched).
set -euo pipefail
export LC_ALL=C

die() { echo "oci-image: $*" >&2; exit "${2:-1}"; }
usage() { die "usage: oci-image.sh BINARY OUT.tar NAME[:TAG]" 2; }

[ $# -eq 3 ] || usage
binary=$1 out=$2 ref=$3
[ -f "$binary" ] || die "binary '$binary' is not a file" 2
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

# --- the platform, read from the ELF header (e_machine at byte 18, little-endian)
[ "$(head -c 4 "$binary" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ] \
  || die "'$binary' is not an ELF executable" 2
machine=$(od -An -tu2 -j18 -N2 "$binary" | tr -d ' \n')
case $machine in
  62) arch=amd64 ;;
  183) arch=arm64 ;;
  *) die "'$binary' is for ELF machine $machine, neither x86-64 nor aarch64" 2 ;;
esac

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

# --- the layer: /hostpath-provisioner, 0755, root:root
cp -- "$binary" "$work/layer/hostpath-provisioner"
chmod 0755 "$work/layer/hostpath-provisioner"
det_tar -C "$work/layer" -cf "$work/layer.tar" hostpath-provisioner
diff_id=$(sha256 "$work/layer.tar")
gzip -n -9 -c "$work/layer.tar" > "$work/layer.tar.gz"
layer_size=$(size "$work/layer.tar.gz")
layer=$(add_blob "$work/layer.tar.gz")

# --- the image config
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
printf '%s' "{\"architecture\":\"$arch\",\"os\":\"linux\",\"created\":\"$created\",\
\"config\":{\"User\":\"0\",\"Entrypoint\":[\"/hostpath-provisioner\"],\"WorkingDir\":\"/\"},\
\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:$diff_id\"]},\
\"history\":[{\"created\":\"$created\",\"created_by\":\"scripts/oci-image.sh: COPY hostpath-provisioner /\"}]}" \
  > "$work/config.json"
config_size=$(size "$work/config.json")
config=$(add_blob "$work/config.json")

# --- the OCI manifest and index
printf '%s' "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\
\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"sha256:$config\",\"size\":$config_size},\
\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"sha256:$layer\",\"size\":$layer_size}]}" \
  > "$work/manifest.json"
manifest_size=$(size "$work/manifest.json")
manifest=$(add_blob "$work/manifest.json")

image=$work/image
printf '%s' "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\
\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:$manifest\",\"size\":$manifest_size,\
\"annotations\":{\"io.containerd.image.name\":\"$full_name:$tag\",\"org.opencontainers.image.ref.name\":\"$tag\"}}]}" \
  > "$image/index.json"
printf '%s' '{"imageLayoutVersion":"1.0.0"}' > "$image/oci-layout"

# --- docker load's manifest.json (it unpacks gzipped layers itself)
printf '%s' "[{\"Config\":\"blobs/sha256/$config\",\"RepoTags\":[\"$name:$tag\"],\
\"Layers\":[\"blobs/sha256/$layer\"]}]" > "$image/manifest.json"

# --- the archive, written beside OUT and renamed into place
chmod 0644 "$blobs"/* "$image"/*.json "$image/oci-layout"
chmod 0755 "$image/blobs" "$blobs"
tmp_out=$(mktemp "$out.XXXXXX")
det_tar -C "$image" -cf "$tmp_out" blobs index.json manifest.json oci-layout
chmod 0644 "$tmp_out"
mv -f -- "$tmp_out" "$out"
tmp_out=

echo "image $name:$tag ($full_name:$tag, $arch) manifest sha256:$manifest"
echo "archive $out: $(size "$out") bytes"
