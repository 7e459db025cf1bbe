// The provisioner under test as a process (PROVISIONER, ./hostpath-provisioner by default), and
// its /metrics.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "test/bench/fake_client.hpp"
#include "test/support/harness.hpp"

namespace bench {

struct Provisioner {
  std::unique_ptr<harness::Process> proc;
  double ready_seconds = 0;  // exec -> first /readyz 200
  int port = 0;              // of its HTTP endpoint
};

// Starts the provisioner with the fake's service-account kubeconfig, PV_DIR pv_dir, LOG_LEVEL 0
// and `env` on top (e.g. NODE_NAME; a key given there wins); its output goes to `log`. Returns
// once /readyz answers 200. Throws Failure if it exits or is not ready within 60 s.
Provisioner StartProvisioner(const Fake& fake, const std::string& pv_dir, const std::string& log,
                             std::map<std::string, std::string> env = {});

// Node-aware instances of a small cluster (SMALL_CLUSTER_NODES): waits up to 60 s until every
// one watches every claim and the dispatcher labels only claims still waiting (its log says so),
// as such a cluster runs once settled. Start them with LEADER_ELECT_LEASE_DURATION=6 (their looks
// at the Lease every 6 s, not 30 s). Throws Failure if they do not settle.
void WaitSmallClusterSettled(const std::vector<Provisioner>& instances);

// The value of an unlabelled series on the provisioner's /metrics; -1 when it is not there.
double MetricValue(int port, const std::string& name);

}  // namespace bench
