# make bench: the performance benchmark (test/bench.cpp, about two minutes). Runs the provisioner
# binary against the fake API server, and a baseline client against a second one; prints a
# table of the figures against their targets and writes build/bench.json. Work files and logs:
# build/bench-run/. What it measures and why: docs/performance.md.
.PHONY: bench

$(BUILD)/bench: $(BUILD)/obj/test/bench.o $(BUILD)/libhp-test.a $(BUILD)/libhp.a
	$(CXX) $(TEST_FLAGS) $< -o $@ $(call LINK_LIBS,$(BUILD))

bench: hostpath-provisioner $(FAKE) $(BUILD)/bench
	$(BUILD)/bench
