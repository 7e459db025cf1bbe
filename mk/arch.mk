# Builds for ARM boards, cross-compiled from Debian packages and tested under qemu user-mode
# emulation (docs/arm.md):
#   make ARCH=arm64             build/arm64/hostpath-provisioner  (linux/arm64: Pi 3/4/5, 64-bit OS)
#   make ARCH=armv7             build/armv7/hostpath-provisioner  (linux/arm/v7: Pi 2/3/4, 32-bit OS)
#   make test-arch ARCH=...     the unit tests built static for ARCH and run under qemu, then
#                               the e2e cases ARCH_E2E_CASES of e2e_provision (native) driving
#                               the ARCH provisioner under qemu
#   make image-arch ARCH=...    build/hostpath-provisioner-image-ARCH.tar, one platform
#   make image-multiarch        build/hostpath-provisioner-image-multiarch.tar: one OCI image
#                               index for linux/amd64, linux/arm64 and linux/arm/v7
# scripts/cross-deps.sh installs the cross compiler and qemu-user-static, and unpacks the
# target's libraries into build/ARCH/sysroot (the system's dpkg learns no foreign architecture).
# Same flags and hardening as the native build; 64-bit file offsets and time_t on 32-bit ARM.
ARCHES := arm64 armv7
ARCH_E2E_CASES ?= a claim of the bundled class is bound to a new PV with its directory,deleting a claim of a Delete volume removes its PV and directory,SIGHUP is logged and ignored*
# The fake API server's own tests check test code, which only ever runs natively.
ARCH_UNIT_SRCS := $(filter-out test/unit/unit_fake_%,$(UNIT_SRCS))

.PHONY: arch-deps test-arch image-arch image-multiarch
# An ARCH from the environment (kernel builds use one) that is not ours means the native build.
ifneq ($(origin ARCH),command line)
ARCH := $(filter $(ARCHES),$(ARCH))
endif
ifneq ($(filter-out $(ARCHES),$(ARCH)),)
$(error ARCH=$(ARCH): use ARCH=arm64 or ARCH=armv7 (the native build needs no ARCH))
endif

ifneq ($(ARCH),)
X_DIR     := $(BUILD)/$(ARCH)
X_SYSROOT := $(X_DIR)/sysroot
X_TRIPLET := $(if $(filter arm64,$(ARCH)),aarch64-linux-gnu,arm-linux-gnueabihf)
X_QEMU    := $(if $(filter arm64,$(ARCH)),qemu-aarch64-static,qemu-arm-static)
X_PLATFORM := $(if $(filter arm64,$(ARCH)),linux/arm64,linux/arm/v7)
X_CXX     := $(X_TRIPLET)-g++
X_PROV    := $(X_DIR)/hostpath-provisioner
# -Wno-psabi: notes that GCC 7.1 changed how armhf passes some structs; all code here is built
# by one compiler.
X_FLAGS   := -isystem $(X_SYSROOT)/usr/include -isystem $(X_SYSROOT)/usr/include/$(X_TRIPLET) \
             -D_FILE_OFFSET_BITS=64 -D_TIME_BITS=64 -Wno-psabi
X_LINK    := -L$(X_SYSROOT)/usr/lib/$(X_TRIPLET)
X_RUN     := $(ARCH_UNIT_SRCS:test/unit/%.cpp=$(X_DIR)/run/%) $(X_DIR)/run/e2e_provision
.DEFAULT_GOAL := $(X_PROV)

arch-deps: $(X_SYSROOT)/.complete
$(X_SYSROOT)/.complete: scripts/cross-deps.sh
	bash scripts/cross-deps.sh $(ARCH) $(X_SYSROOT)

$(eval $(call BUILD_KIND,$(X_DIR),$(X_CXX),$(X_FLAGS) -O1,$(X_SYSROOT)/.complete))
$(eval $(call BUILD_KIND,$(X_DIR)/rel,$(X_CXX),$(X_FLAGS) $(REL_FLAGS),$(X_SYSROOT)/.complete))
$(X_PROV): $(X_DIR)/rel/obj/main.o $(PROD_SRCS:%.cpp=$(X_DIR)/rel/obj/%.o) $(X_DIR)/rel/obj/httplib.o
	$(X_CXX) $(REL_FLAGS) $^ -o $@ $(REL_LINK) $(X_LINK) $(LIBS)

# Test binaries are static too: a dynamic one would mix the cross toolchain's glibc with the
# sysroot's libraries (threads hung so under qemu).
$(call TEST_BINS,$(X_DIR),$(ARCH_UNIT_SRCS)): $(X_DIR)/test/%: $(X_DIR)/obj/test/support/catch_main.o $(X_DIR)/libhp-test.a $(X_DIR)/libhp.a
	@mkdir -p $(@D)
	$(X_CXX) -O1 -static $(filter %.o,$^) -o $@ $(X_LINK) $(call LINK_LIBS,$(X_DIR))

# What qemu-user 7.2 (bookworm) cannot emulate is left out there: it reports every mount id as
# 0, so a bind mount inside a volume looks like part of it, and it has no btrfs ioctls.
ARCH_QEMU_SKIP_unit_fsops := "~RemoveTree leaves mounts inside a volume alone and reports them"
ARCH_QEMU_SKIP_unit_quota := "~[btrfs]"
ARCH_QEMU_SKIP_unit_copy_tree := "~[mount]~[btrfs]"

.PRECIOUS: $(X_DIR)/test/unit_%
# test/run.sh runs binaries directly and this kernel may have no binfmt handler for ARM: each
# test gets a script that starts it under qemu, and the provisioner one too.
$(X_DIR)/run/unit_%: $(X_DIR)/test/unit_%
	@mkdir -p $(@D)
	printf '#!/bin/sh\nexec $(X_QEMU) $< $(ARCH_QEMU_SKIP_unit_$*) "$$@"\n' > $@
	chmod +x $@
$(X_DIR)/run/hostpath-provisioner: $(X_PROV)
	@mkdir -p $(@D)
	printf '#!/bin/sh\nexec $(X_QEMU) $< "$$@"\n' > $@
	chmod +x $@
$(X_DIR)/run/e2e_provision: $(BUILD)/test/e2e_provision $(X_DIR)/run/hostpath-provisioner $(FAKE)
	printf '#!/bin/sh\nPROVISIONER=$(X_DIR)/run/hostpath-provisioner exec $< "$(ARCH_E2E_CASES)" "$$@"\n' > $@
	chmod +x $@

# A single-platform archive for ARCH (also for docker load).
image-arch: $(X_PROV)
	bash scripts/oci-image.sh $(X_PROV) $(BUILD)/hostpath-provisioner-image-$(ARCH).tar hostpath-provisioner:latest

test-arch: $(X_RUN)
	$(X_QEMU) $(X_PROV) --version | grep -F '$(X_PLATFORM))'
	TEST_JOBS=$${TEST_JOBS:-$$(nproc)} bash test/run.sh $(X_RUN)
else
test-arch arch-deps image-arch:
	@echo "$@: give ARCH=arm64 or ARCH=armv7" >&2; exit 2
endif

# One archive for all three platforms (an OCI image index; `ctr images import --all-platforms`).
MULTIARCH_IMAGE := $(BUILD)/hostpath-provisioner-image-multiarch.tar
image-multiarch: hostpath-provisioner
	$(MAKE) ARCH=arm64
	$(MAKE) ARCH=armv7
	bash scripts/oci-image.sh ./hostpath-provisioner $(BUILD)/arm64/hostpath-provisioner \
	  $(BUILD)/armv7/hostpath-provisioner $(MULTIARCH_IMAGE) hostpath-provisioner:latest
