#!/usr/bin/env bash
# Runs the project quota cases of unit_quota (ext4 and XFS), which need a kernel with quota
# support that the machine's own may lack, in a virtual machine: Debian's kernel (its package,
# unpacked into BUILD/vm), an initramfs with busybox, the kernel's modules for the filesystems
# and virtio, and a static build of the test; the filesystems are made here and handed to the
# machine as disks, which its init mounts at /mnt/NAME. Prints the test's output and exits
# with its status. Under qemu without KVM this takes about a minute.
#   test/quota_vm.sh BUILD_DIR STATIC_TEST [CATCH_ARGS...]
set -euo pipefail
build=$1 test_bin=$2
shift 2
vm=$build/vm

skip() {  # no virtual machine here: say why, as a passing run of no test cases
  echo "SKIPPED: the project quota cases need a virtual machine: $*"
  echo "All tests passed (0 assertions in 0 test cases)"
  exit 0
}
[ "$(uname -m)" = x86_64 ] || skip "only set up for x86_64 hosts"
[ "$(id -u)" = 0 ] || skip "making its filesystems needs root"

need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
[ -x /bin/busybox ] || need+=(busybox-static)
command -v mkfs.xfs >/dev/null || need+=(xfsprogs)
if [ ${#need[@]} -gt 0 ]; then
  echo "quota_vm: installing ${need[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# Debian's kernel, the one linux-image-amd64 points at, unpacked (not installed).
kernel_pkg() { apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}'; }
pkg=$(kernel_pkg)
if [ -z "$pkg" ]; then apt-get update -qq; pkg=$(kernel_pkg); fi
[ -n "$pkg" ] || { echo "quota_vm: no Debian kernel package (linux-image-amd64) in the apt sources" >&2; exit 1; }
if [ ! -f "$vm/$pkg/done" ]; then
  rm -rf "$vm/$pkg" && mkdir -p "$vm/$pkg"
  (cd "$vm/$pkg" && apt-get download -q "$pkg" >/dev/null 2>&1 && dpkg-deb -x ./*.deb root && rm -f ./*.deb)
  touch "$vm/$pkg/done"
fi
release=$(ls "$vm/$pkg/root/lib/modules")
modules=$vm/$pkg/root/lib/modules/$release

# The initramfs: busybox, the modules, the test, and an init that mounts the disks and runs it.
ir=$vm/initramfs
rm -rf "$ir" && mkdir -p "$ir/bin" "$ir/lib/modules/$release/kernel"
cp /bin/busybox "$ir/bin/"
for m in fs/ext4 fs/xfs fs/jbd2 fs/quota fs/mbcache.ko drivers/virtio drivers/block/virtio_blk.ko lib crypto arch/x86/crypto; do
  mkdir -p "$ir/lib/modules/$release/kernel/$(dirname $m)"
  cp -r "$modules/kernel/$m" "$ir/lib/modules/$release/kernel/$m"
done
cp "$modules"/modules.builtin* "$modules/modules.order" "$ir/lib/modules/$release/"
cp "$test_bin" "$ir/unit_quota"
# The disks, in the order of the init's mounts: name, the mkfs command, mount options.
disks=(
  "ext4|mkfs.ext4 -q -F -O project,quota -E quotatype=prjquota|prjquota"
  "xfs|mkfs.xfs -q -f|prjquota"
  "ext4-ids|mkfs.ext4 -q -F -O project,quota -E quotatype=prjquota|prjquota"
  "ext4-noprj|mkfs.ext4 -q -F -O project,quota -E quotatype=prjquota|"
  "xfs-noprj|mkfs.xfs -q -f|"
)
drives=() mounts="" letters=(a b c d e)
for i in "${!disks[@]}"; do
  IFS='|' read -r name mkfs options <<<"${disks[$i]}"
  img=$vm/$name.img
  rm -f "$img" && truncate -s 300M "$img"
  $mkfs "$img" >/dev/null
  drives+=(-drive "file=$img,format=raw,if=virtio")
  mounts+="mkdir -p /mnt/$name && mount ${options:+-o $options} /dev/vd${letters[$i]} /mnt/$name && touch /mnt/$name/.mounted
"
done
args=$(printf '%q ' "$@")
cat > "$ir/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
depmod
for m in crc32c_generic virtio_pci virtio_blk ext4 xfs quota_v2; do modprobe \$m; done
$mounts
echo QUOTA_VM_START
QUOTA_VM=1 /unit_quota $args 2>&1
echo QUOTA_VM_EXIT=\$?
poweroff -f
INIT
chmod +x "$ir/init"
mkdir -p "$ir/proc" "$ir/sys" "$ir/dev" "$ir/mnt"
(cd "$ir" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) > "$vm/initrd.gz"

out=$(timeout 900 qemu-system-x86_64 -m 768 -nographic -no-reboot -net none -kernel "$vm/$pkg/root/boot/vmlinuz-$release" \
      -initrd "$vm/initrd.gz" -append "console=ttyS0 quiet panic=-1" "${drives[@]}" 2>&1 | tr -d '\r' || true)
rm -f "$vm"/*.img
printf "%s\n" "$out" > "$vm/console.log"
printf '%s\n' "$out" | sed -n '/QUOTA_VM_START/,$p' | sed '1d;/QUOTA_VM_EXIT=/,$d'
rc=$(printf '%s\n' "$out" | sed -n 's/.*QUOTA_VM_EXIT=\([0-9]*\).*/\1/p')
if [ -z "$rc" ]; then
  echo "quota_vm: the virtual machine did not finish the tests; its console said:" >&2
  printf '%s\n' "$out" | tail -n 30 >&2
  exit 1
fi
exit "$rc"
