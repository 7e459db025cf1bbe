# make soak: the fault scenario of test/e2e_faults.cpp at full size (a few hundred claims,
# a minute-long pause of the API server, a pause longer than the client's request timeout),
# against the real binary and the fake API server. Takes several minutes. SEED=N replays a run.
.PHONY: soak
soak: hostpath-provisioner $(FAKE) $(BUILD)/test/e2e_faults
	SOAK=1 $(BUILD)/test/e2e_faults --durations yes "[faults]"
