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
# httplib.h split into declarations and bodies (scripts/httplib-split.sh): the files include the
# split header, and the bodies are compiled once per kind of build, into libhp.a.
HTTPLIB_SPLIT := $(BUILD)/httplib/split
VERSION   := $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
COMMIT    := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)

CXX       ?= g++
WARN      := -Wall -Wextra -Werror -Wno-missing-field-initializers
CPPFLAGS  := -I. -isystem $(HTTPLIB_SPLIT) -DCPPHTTPLIB_OPENSSL_SUPPORT -DCPPHTTPLIB_USE_POLL
# Only main.cpp names the version: its objects are built again when build/version changes.
VERSION_FLAGS := -DHP_VERSION='"$(VERSION)"' -DHP_COMMIT='"$(COMMIT)"'
$(shell mkdir -p $(BUILD) && echo '$(VERSION) $(COMMIT)' | cmp -s - $(BUILD)/version || echo '$(VERSION) $(COMMIT)' > $(BUILD)/version)
CXXFLAGS  := -std=c++17 $(WARN)
# The shipped binary: small (link-time optimisation, unused sections dropped), static, hardened.
REL_FLAGS := -Os -flto -ffunction-sections -fdata-sections -fstack-protector-strong -D_FORTIFY_SOURCE=2
REL_LINK  := -static -Wl,--gc-sections -Wl,-z,relro,-z,now -s
LIBS      := -lyaml -lssl -lcrypto -pthread
# Tests: quick to build, with debug info; the tests' own code (TEST_OBJ_FLAGS: test/unit,
# test/e2e, Catch2's main) unoptimised, which halves its compile time; the product and the fake
# it drives stay optimised.
TEST_FLAGS := -O1 -g
TEST_OBJ_FLAGS := -O0
# Header dependencies come from the compiler: each object X gets X.d next to it, read back by
# the -include at the end.
DEPFLAGS   = -MMD -MP -MF $(if $(filter $(BUILD)/%,$@),$@,$(BUILD)/$@).d -MT $@

# The product, by layer (lowest first; includes point down this list): each part is a header
# (its contract) and a .cpp (its body). main.cpp only wires them.
LAYERS    := base kube fs decide control serve
PROD_SRCS := $(wildcard $(LAYERS:%=%/*.cpp) $(LAYERS:%=%/*/*.cpp))
# What the tests share: their helpers and the fake API server (test/fake/fake_apiserver_main.cpp
# is the fake's own binary, test/support/catch_main.cpp Catch2's main).
TLIB_SRCS := $(filter-out test/fake/fake_apiserver_main.cpp test/support/catch_main.cpp,\
               $(wildcard test/support/*.cpp test/fake/*.cpp))
UNIT_SRCS := $(wildcard test/unit/unit_*.cpp)
E2E_SRCS  := $(wildcard test/e2e/e2e_*.cpp)
UNIT_BINS := $(UNIT_SRCS:test/unit/%.cpp=$(BUILD)/test/%)
E2E_BINS  := $(E2E_SRCS:test/e2e/%.cpp=$(BUILD)/test/%)
FAKE      := $(BUILD)/fake-apiserver

# Every .cpp is compiled once per kind of build (DIR: $(BUILD) for the tests, $(BUILD)/rel for
# the shipped binary, $(BUILD)/asan, ...) into DIR/obj/, the product's into DIR/libhp.a and the
# tests' shared code into DIR/libhp-test.a; binaries link those.
# The tests' own objects (test/unit, test/e2e and Catch2's main) get TEST_OBJ_FLAGS as well
# (through TEST_OBJ, which only those objects set).
#   $(call BUILD_KIND,DIR,COMPILER,FLAGS,ORDER-ONLY PREREQUISITES,TEST_OBJ_FLAGS)
define BUILD_KIND
$(1)/obj/%.o: %.cpp $$(HTTPLIB_SPLIT)/httplib.h $(1)/obj/%.o.d | $(4)
	@mkdir -p $$(@D)
	$(2) $$(CPPFLAGS) $$(if $$(filter main.cpp,$$<),$$(VERSION_FLAGS)) $(3) $$(CXXFLAGS) $$(TEST_OBJ) $$(DEPFLAGS) -c $$< -o $$@
$(1)/obj/main.o: $$(BUILD)/version
$(1)/obj/httplib.o: $$(HTTPLIB_SPLIT)/httplib.cc | $(4)
	@mkdir -p $$(@D)
	$(2) $$(CPPFLAGS) $(3) $$(CXXFLAGS) -c $$< -o $$@
$(1)/libhp.a: $$(PROD_SRCS:%.cpp=$(1)/obj/%.o) $(1)/obj/httplib.o
	@mkdir -p $$(@D)
	rm -f $$@ && $$(AR) rcs $$@ $$^
$(1)/libhp-test.a: $$(TLIB_SRCS:%.cpp=$(1)/obj/%.o)
	@mkdir -p $$(@D)
	rm -f $$@ && $$(AR) rcs $$@ $$^
# Catch2 precompiled once per kind, by that kind's compiler with its flags: each test object
# (test/unit, test/e2e) starts from it (-include DIR/pch/catch.hpp: the compiler takes the .gch
# next to it) instead of parsing Catch2 and the std headers it brings again. The header names
# the command, and is rewritten only when that changes, so new flags build the .gch again; a
# .gch that does not fit the object's flags is an error (-Winvalid-pch), never silently unused.
$(1)/pch/catch.hpp: FORCE
	@mkdir -p $$(@D)
	@printf '// Precompiled into catch.hpp.gch by: %s\n#include <catch2/catch.hpp>\n' \
	  '$(2) $$(CPPFLAGS) $(3) $$(CXXFLAGS) $(5)' > $$@.new
	@cmp -s $$@.new $$@ && rm $$@.new || mv $$@.new $$@
$(1)/pch/catch.hpp.gch: $(1)/pch/catch.hpp | $$(HTTPLIB_SPLIT)/httplib.h $(4)
	$(2) $$(CPPFLAGS) $(3) $$(CXXFLAGS) $(5) -x c++-header $$< -o $$@
$$(patsubst %.cpp,$(1)/obj/%.o,$$(UNIT_SRCS) $$(E2E_SRCS)): $(1)/pch/catch.hpp.gch
$$(patsubst %.cpp,$(1)/obj/%.o,$$(UNIT_SRCS) $$(E2E_SRCS)): private TEST_OBJ = $(5) -include $(1)/pch/catch.hpp -Winvalid-pch
$(1)/obj/test/support/catch_main.o: private TEST_OBJ = $(5)
endef
# A test binary DIR/test/NAME from test/*/NAME.cpp, Catch2's main and both libraries.
#   $(call TEST_BINS,DIR,SOURCES): the list of binaries, each depending on its own object
TEST_BINS = $(foreach s,$(2),$(eval $(1)/test/$(basename $(notdir $(s))): $(1)/obj/$(s:.cpp=.o)))\
            $(patsubst %.cpp,$(1)/test/%,$(notdir $(2)))
LINK_LIBS = -Wl,--start-group $(1)/libhp-test.a $(1)/libhp.a -Wl,--end-group $(LIBS)
# A provisioner binary of a kind (ASan, TSan) links the product's library only: the tests'
# library is no prerequisite of it, so naming it raced its build under make -j.
PROD_LINK = $(1)/libhp.a $(LIBS)
# Objects stay after a build (make would remove those only a pattern rule names).
.PRECIOUS: $(BUILD)/%.o

.PHONY: all deps test unit e2e demo image clean FORCE
all: hostpath-provisioner

deps: $(HTTPLIB_SPLIT)/httplib.h
$(HTTPLIB): scripts/deps.sh
	bash scripts/deps.sh $(BUILD)
	touch $@
$(HTTPLIB_SPLIT)/httplib.h $(HTTPLIB_SPLIT)/httplib.cc &: $(HTTPLIB) scripts/httplib-split.sh
	bash scripts/httplib-split.sh $< $(HTTPLIB_SPLIT)

$(eval $(call BUILD_KIND,$(BUILD),$(CXX),$(TEST_FLAGS),,$(TEST_OBJ_FLAGS)))
$(eval $(call BUILD_KIND,$(BUILD)/rel,$(CXX),$(REL_FLAGS)))

hostpath-provisioner: $(BUILD)/rel/obj/main.o $(PROD_SRCS:%.cpp=$(BUILD)/rel/obj/%.o) $(BUILD)/rel/obj/httplib.o
	$(CXX) $(REL_FLAGS) $^ -o $@ $(REL_LINK) $(LIBS)

$(call TEST_BINS,$(BUILD),$(UNIT_SRCS) $(E2E_SRCS)): $(BUILD)/test/%: $(BUILD)/obj/test/support/catch_main.o $(BUILD)/libhp-test.a $(BUILD)/libhp.a
	@mkdir -p $(@D)
	$(CXX) $(TEST_FLAGS) $(filter %.o,$^) -o $@ $(call LINK_LIBS,$(BUILD))

$(FAKE): $(BUILD)/obj/test/fake/fake_apiserver_main.o $(BUILD)/libhp-test.a $(BUILD)/libhp.a
	$(CXX) $(TEST_FLAGS) $< -o $@ $(call LINK_LIBS,$(BUILD))

# The project quota cases of unit_quota need a kernel with quota support: they run in a virtual
# machine with Debian's kernel (test/quota_vm.sh), from a static build of the test.
QUOTA_VM  := $(BUILD)/test/vm_unit_quota
$(BUILD)/test/unit_quota.static: $(BUILD)/obj/test/unit/unit_quota.o $(BUILD)/obj/test/support/catch_main.o $(BUILD)/libhp-test.a $(BUILD)/libhp.a
	@mkdir -p $(@D)
	$(CXX) $(TEST_FLAGS) -static $(filter %.o,$^) -o $@ $(call LINK_LIBS,$(BUILD))
$(QUOTA_VM): $(BUILD)/test/unit_quota.static test/quota_vm.sh
	printf '#!/bin/sh\nexec bash test/quota_vm.sh $(BUILD) $< "[project]" --use-colour no\n' > $@
	chmod +x $@

unit: $(UNIT_BINS)
	bash test/run.sh $(UNIT_BINS)

e2e: hostpath-provisioner $(FAKE) $(E2E_BINS)
	bash test/run.sh $(E2E_BINS)

# The benchmark is built (not run) with the tests, so that a change to the test support it
# shares is seen to break it.
test: hostpath-provisioner $(FAKE) $(UNIT_BINS) $(E2E_BINS) $(QUOTA_VM) $(BUILD)/bench
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

# The compiler's header dependencies (DEPFLAGS) of every object built so far. Each object also
# depends on its .d file, so that one built without it (or before this rule) is built again.
$(BUILD)/%.d: ;
.PRECIOUS: $(BUILD)/%.d
-include $(shell find $(BUILD) -path $(BUILD)/apt -prune -o -name '*.o.d' -print 2>/dev/null)
