# make soak: the fault scenario of test/e2e/e2e_faults.cpp at full size (a few hundred claims,
# a minute-long pause of the API server, a pause longer than the client's request timeout),
# against the real binary and the fake API server. Takes several minutes. SEED=N replays a run.
# Both binaries are copied first, so that a rebuild meanwhile cannot pull them from under a
# restart.
SOAK_DIR := $(BUILD)/soak

.PHONY: soak
soak: hostpath-provisioner $(FAKE) $(BUILD)/test/e2e_faults
	@mkdir -p $(SOAK_DIR)
	cp hostpath-provisioner $(SOAK_DIR)/hostpath-provisioner
	cp $(FAKE) $(SOAK_DIR)/fake-apiserver
	SOAK=1 PROVISIONER=$(SOAK_DIR)/hostpath-provisioner FAKE_APISERVER=$(SOAK_DIR)/fake-apiserver \
	  $(BUILD)/test/e2e_faults --durations yes "[faults]~[known-bug]"
