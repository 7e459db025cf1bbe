# make bench: the performance benchmark (test/bench/, about two minutes). Runs the provisioner
# binary against the fake API server, and a baseline client against a second one; prints a
# table of the figures against their targets and writes build/bench.json. Work files and logs:
# build/bench-run/. What it measures and why: docs/performance.md.
#   make bench BENCH_ARGS="--only node-scale"   one section, or one not run by default (node scale,
#                                                capacity: storage capacity, root)
.PHONY: bench

BENCH_SRCS := $(wildcard test/bench/*.cpp)
BENCH_ARGS ?=

$(BUILD)/bench: $(BENCH_SRCS:%.cpp=$(BUILD)/obj/%.o) $(BUILD)/libhp-test.a $(BUILD)/libhp.a
	$(CXX) $(TEST_FLAGS) $(filter %.o,$^) -o $@ $(call LINK_LIBS,$(BUILD))

bench: hostpath-provisioner $(FAKE) $(BUILD)/bench
	$(BUILD)/bench $(BENCH_ARGS)
