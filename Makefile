# hostpath-provisioner — build, test, demo.
#   make          the static binary ./hostpath-provisioner
#   make test     unit and end-to-end tests (installs missing build dependencies first)
#   make demo     runs the provisioner against the bundled fake API server on loopback
#   make image    an OCI image archive of the binary; more targets in mk/*.mk
#   make ARCH=arm64 | ARCH=armv7   the binary for ARM boards, build/ARCH/ (mk/arch.mk)
# Builds run in parallel, one job per CPU, unless -j is given (`make -j1` for one at a time).
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
BUILD     := build
HTTPLIB   := $(BUILD)/httplib/httplib.h
VERSION   := $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
COMMIT    := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)

CXX       ?= g++
WARN      := -Wall -Wextra -Werror -Wno-missing-field-initializers
CPPFLAGS  := -I. -isystem $(BUILD)/httplib -DCPPHTTPLIB_OPENSSL_SUPPORT -DCPPHTTPLIB_USE_POLL \
             -DHP_VERSION='"$(VERSION)"' -DHP_COMMIT='"$(COMMIT)"'
CXXFLAGS  := -std=c++17 $(WARN)
# The shipped binary: small (link-time optimisation, unused sections dropped), static, hardened.
REL_FLAGS := -Os -flto -ffunction-sections -fdata-sections -fstack-protector-strong -D_FORTIFY_SOURCE=2
REL_LINK  := -static -Wl,--gc-sections -Wl,-z,relro,-z,now -s
LIBS      := -lyaml -lssl -lcrypto -pthread
# Tests: quick to build, with debug info.
TEST_FLAGS := -O1 -g
# Header dependencies come from the compiler: each binary or object X gets X.d next to it
# (the provisioner's in $(BUILD)/), read back by the -include at the end.
DEPFLAGS   = -MMD -MP -MF $(if $(filter $(BUILD)/%,$@),$@,$(BUILD)/$@).d -MT $@

UNIT_SRCS := $(wildcard test/unit_*.cpp)
E2E_SRCS  := $(wildcard test/e2e_*.cpp)
UNIT_BINS := $(UNIT_SRCS:test/%.cpp=$(BUILD)/test/%)
E2E_BINS  := $(E2E_SRCS:test/%.cpp=$(BUILD)/test/%)
FAKE      := $(BUILD)/fake-apiserver

.PHONY: all deps test unit e2e demo image clean
all: hostpath-provisioner

deps: $(HTTPLIB)
$(HTTPLIB): scripts/deps.sh
	bash scripts/deps.sh $(BUILD)
	touch $@

hostpath-provisioner: main.cpp $(HTTPLIB) $(BUILD)/hostpath-provisioner.d
	@mkdir -p $(BUILD)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) $(DEPFLAGS) $(REL_FLAGS) main.cpp -o $@ $(REL_LINK) $(LIBS)

$(BUILD)/test/catch_main.o: test/catch_main.cpp $(HTTPLIB) $(BUILD)/test/catch_main.o.d
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) $(DEPFLAGS) $(TEST_FLAGS) -c $< -o $@

$(BUILD)/test/%: test/%.cpp $(BUILD)/test/catch_main.o $(HTTPLIB) $(BUILD)/test/%.d
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) $(DEPFLAGS) $(TEST_FLAGS) $< $(BUILD)/test/catch_main.o -o $@ $(LIBS)

$(FAKE): test/fake_apiserver_main.cpp $(HTTPLIB) $(FAKE).d
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) $(DEPFLAGS) -O2 $< -o $@ $(LIBS)

# The project quota cases of unit_quota need a kernel with quota support: they run in a virtual
# machine with Debian's kernel (test/quota_vm.sh), from a static build of the test.
QUOTA_VM  := $(BUILD)/test/vm_unit_quota
$(BUILD)/test/unit_quota.static: test/unit_quota.cpp $(BUILD)/test/catch_main.o $(HTTPLIB) $(BUILD)/test/unit_quota.static.d
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) $(DEPFLAGS) $(TEST_FLAGS) -static $< $(BUILD)/test/catch_main.o -o $@ $(LIBS)
$(QUOTA_VM): $(BUILD)/test/unit_quota.static test/quota_vm.sh
	printf '#!/bin/sh\nexec bash test/quota_vm.sh $(BUILD) $< "[project]" --use-colour no\n' > $@
	chmod +x $@

unit: $(UNIT_BINS)
	bash test/run.sh $(UNIT_BINS)

e2e: hostpath-provisioner $(FAKE) $(E2E_BINS)
	bash test/run.sh $(E2E_BINS)

test: hostpath-provisioner $(FAKE) $(UNIT_BINS) $(E2E_BINS) $(QUOTA_VM)
	bash test/run.sh $(UNIT_BINS) $(E2E_BINS) $(QUOTA_VM)

demo: hostpath-provisioner $(FAKE)
	bash scripts/demo.sh

# An OCI image archive (docker load / podman load / k3s ctr images import), no daemon needed.
image: hostpath-provisioner
	@mkdir -p $(BUILD)
	bash scripts/oci-image.sh ./hostpath-provisioner $(BUILD)/hostpath-provisioner-image.tar hostpath-provisioner:latest

clean:
	rm -rf $(BUILD) hostpath-provisioner

# More targets (bench, fuzz, sanitizers, soak) each live in a file of their own.
include $(wildcard mk/*.mk)

# The compiler's header dependencies (DEPFLAGS) of everything built so far. Each binary also
# depends on its .d file, so that one built without it (or before this rule) is built again.
$(BUILD)/%.d: ;
.PRECIOUS: $(BUILD)/%.d
-include $(shell find $(BUILD) -path $(BUILD)/apt -prune -o -name '*.d' -print 2>/dev/null)
