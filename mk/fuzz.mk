# Fuzzing and sanitizer builds, with Debian's clang (installed when missing).
#   make fuzz [FUZZ_SECONDS=20]  builds each test/fuzz/fuzz_NAME.cpp as a libFuzzer target with
#                                ASan + UBSan into build/fuzz/, runs each for FUZZ_SECONDS on the
#                                seeds in test/fuzz/corpus/NAME/ (new inputs go to
#                                build/fuzz/corpus/NAME/), and fails on any crash, leak, timeout,
#                                out-of-memory or broken property (the input is saved in
#                                build/fuzz/artifacts/).
#   make sanitize                every unit test, the e2e tests, the provisioner and the fake API
#                                server built with ASan + UBSan into build/asan/ and run; any
#                                sanitizer report (also from the child processes) fails it.
#   make tsan                    the provisioner and the work-queue test built with
#                                ThreadSanitizer into build/tsan/; runs the queue test and the
#                                e2e tests against that provisioner; any data-race report fails it.
CLANGXX       ?= clang++
CLANG_PKGS    := clang libclang-rt-14-dev
SAN_FLAGS     := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all

FUZZ_SECONDS  ?= 20
FUZZ_MAX_LEN  ?= 4096
FUZZ_RSS_MB   ?= 2048
FUZZ_TIMEOUT  ?= 10
FUZZ_DIR      := $(BUILD)/fuzz
FUZZ_NAMES    := $(patsubst test/fuzz/fuzz_%.cpp,%,$(wildcard test/fuzz/fuzz_*.cpp))
FUZZ_BINS     := $(FUZZ_NAMES:%=$(FUZZ_DIR)/fuzz_%)
# The library is instrumented for libFuzzer (fuzzer-no-link); each target links its driver.
FUZZ_FLAGS    := -g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all

ASAN_DIR      := $(BUILD)/asan
ASAN_UNIT     := $(UNIT_SRCS:test/unit/%.cpp=$(ASAN_DIR)/test/%)
ASAN_E2E      := $(E2E_SRCS:test/e2e/%.cpp=$(ASAN_DIR)/test/%)
ASAN_PROV     := $(ASAN_DIR)/hostpath-provisioner
ASAN_FAKE     := $(ASAN_DIR)/fake-apiserver

TSAN_DIR      := $(BUILD)/tsan
TSAN_FLAGS    := -g -O1 -fno-omit-frame-pointer -fsanitize=thread
TSAN_PROV     := $(TSAN_DIR)/hostpath-provisioner
TSAN_QUEUE    := $(TSAN_DIR)/test/unit_queue
TSAN_FAKE_UT  := $(TSAN_DIR)/test/unit_fake_apiserver

.PHONY: clang-deps fuzz sanitize tsan

clang-deps:
	@missing=""; \
	for p in $(CLANG_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "clang-deps: installing$$missing" >&2; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# --- fuzzing -----------------------------------------------------------------------------
$(eval $(call BUILD_KIND,$(FUZZ_DIR),$(CLANGXX),$(FUZZ_FLAGS),clang-deps))
$(FUZZ_DIR)/fuzz_%: $(FUZZ_DIR)/obj/test/fuzz/fuzz_%.o $(FUZZ_DIR)/libhp-test.a $(FUZZ_DIR)/libhp.a
	@mkdir -p $(@D)
	$(CLANGXX) -fsanitize=fuzzer,address,undefined $< -o $@ $(call LINK_LIBS,$(FUZZ_DIR))

# One target after the other (the machine has 2 cores); a summary line per target at the end.
fuzz: $(FUZZ_BINS)
	@mkdir -p $(FUZZ_DIR)/artifacts; failed=""; summary=""; \
	for name in $(FUZZ_NAMES); do \
	  work=$(FUZZ_DIR)/corpus/$$name; log=$(FUZZ_DIR)/fuzz_$$name.log; mkdir -p $$work; \
	  echo "=== fuzz_$$name: $(FUZZ_SECONDS)s, max_len $(FUZZ_MAX_LEN), rss limit $(FUZZ_RSS_MB) MB, timeout $(FUZZ_TIMEOUT)s"; \
	  if $(FUZZ_DIR)/fuzz_$$name -max_total_time=$(FUZZ_SECONDS) -max_len=$(FUZZ_MAX_LEN) \
	       -rss_limit_mb=$(FUZZ_RSS_MB) -timeout=$(FUZZ_TIMEOUT) -print_final_stats=1 \
	       -artifact_prefix=$(FUZZ_DIR)/artifacts/$$name- $$work test/fuzz/corpus/$$name \
	       </dev/null >$$log 2>&1; then result=ok; \
	  else result=FAILED; failed="$$failed fuzz_$$name"; tail -n 60 $$log; fi; \
	  runs=$$(sed -n 's/^stat::number_of_executed_units: *//p' $$log); \
	  speed=$$(sed -n 's/^stat::average_exec_per_sec: *//p' $$log); \
	  rss=$$(sed -n 's/^stat::peak_rss_mb: *//p' $$log); \
	  line="fuzz_$$name: $$result, $${runs:-?} runs, $${speed:-?} exec/s, peak rss $${rss:-?} MB, corpus $$(ls $$work | wc -l) files"; \
	  echo "$$line"; summary="$$summary$$line\n"; \
	done; \
	printf "=== fuzz summary\n$$summary"; \
	if [ -n "$$failed" ]; then echo "fuzz: failing:$$failed (logs in $(FUZZ_DIR)/, inputs in $(FUZZ_DIR)/artifacts/)"; exit 1; fi

# --- sanitizers --------------------------------------------------------------------------
# OpenSSL is linked dynamically here: only the shipped binary needs to be static.
$(eval $(call BUILD_KIND,$(ASAN_DIR),$(CLANGXX),$(SAN_FLAGS),clang-deps))
$(call TEST_BINS,$(ASAN_DIR),$(UNIT_SRCS) $(E2E_SRCS)): $(ASAN_DIR)/test/%: $(ASAN_DIR)/obj/test/support/catch_main.o $(ASAN_DIR)/libhp-test.a $(ASAN_DIR)/libhp.a
	@mkdir -p $(@D)
	$(CLANGXX) $(SAN_FLAGS) $(filter %.o,$^) -o $@ $(call LINK_LIBS,$(ASAN_DIR))

$(ASAN_FAKE): $(ASAN_DIR)/obj/test/fake/fake_apiserver_main.o $(ASAN_DIR)/libhp-test.a $(ASAN_DIR)/libhp.a
	@mkdir -p $(@D)
	$(CLANGXX) $(SAN_FLAGS) $< -o $@ $(call LINK_LIBS,$(ASAN_DIR))

$(ASAN_PROV): $(ASAN_DIR)/obj/main.o $(ASAN_DIR)/libhp.a
	@mkdir -p $(@D)
	$(CLANGXX) $(SAN_FLAGS) $< -o $@ $(call PROD_LINK,$(ASAN_DIR))

# Reports go to files (test/sanitized_run.sh), also those of the child processes.
sanitize: $(ASAN_UNIT) $(ASAN_E2E) $(ASAN_PROV) $(ASAN_FAKE)
	PROVISIONER=$(ASAN_PROV) FAKE_APISERVER=$(ASAN_FAKE) \
	  bash test/sanitized_run.sh sanitize $(ASAN_DIR) $(ASAN_UNIT) $(ASAN_E2E)

# --- ThreadSanitizer ---------------------------------------------------------------------
# The workers, informers, recorder and HTTP endpoint share the cache, the queue and the
# controller's sets: races there show up as reports from the provisioner while the e2e tests
# drive it. The tests themselves are the ordinary build.
$(eval $(call BUILD_KIND,$(TSAN_DIR),$(CLANGXX),$(TSAN_FLAGS),clang-deps))
# The fake's event loop thread against the tests' threads that pause it, drop its watches and
# send requests at once (unit_fake_apiserver), and the queue's own test.
$(call TEST_BINS,$(TSAN_DIR),test/unit/unit_queue.cpp test/unit/unit_fake_apiserver.cpp): $(TSAN_DIR)/test/%: $(TSAN_DIR)/obj/test/support/catch_main.o $(TSAN_DIR)/libhp-test.a $(TSAN_DIR)/libhp.a
	@mkdir -p $(@D)
	$(CLANGXX) $(TSAN_FLAGS) $(filter %.o,$^) -o $@ $(call LINK_LIBS,$(TSAN_DIR))

$(TSAN_PROV): $(TSAN_DIR)/obj/main.o $(TSAN_DIR)/libhp.a
	@mkdir -p $(@D)
	$(CLANGXX) $(TSAN_FLAGS) $< -o $@ $(call PROD_LINK,$(TSAN_DIR))

tsan: $(TSAN_PROV) $(TSAN_QUEUE) $(TSAN_FAKE_UT) $(E2E_BINS) $(FAKE)
	PROVISIONER=$(TSAN_PROV) bash test/sanitized_run.sh tsan $(TSAN_DIR) $(TSAN_QUEUE) $(TSAN_FAKE_UT) $(E2E_BINS)
