# make bench: the performance benchmark (test/bench.cpp). Starts the fake API server and the
# provisioner, runs claim bursts against both the provisioner and a minimal baseline client,
# prints a table with the targets, and writes build/bench.json. Work files and logs: build/bench-run/.
.PHONY: bench

$(BUILD)/bench: test/bench.cpp $(HTTPLIB) $(BUILD)/bench.d
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) $(DEPFLAGS) -O2 $< -o $@ $(LIBS)

bench: hostpath-provisioner $(FAKE) $(BUILD)/bench
	$(BUILD)/bench
