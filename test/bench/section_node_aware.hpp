// Node-aware mode against single-node mode: kNodes instances (NODE_NAME node-i, a root each) and a
// WaitForFirstConsumer class, kNodeBurst claims at once spread over the nodes (selected-node set
// at their create, standing in for the scheduler), against one single-node instance and the
// Immediate class, each on a fake of its own; kNodeRounds rounds, alternating. Three registered
// nodes make a small cluster (SMALL_CLUSTER_NODES): the bursts start once it has settled, every
// instance watching every claim.
#pragma once
#include <vector>

#include <picojson.h>

#include "test/bench/common.hpp"
#include "test/bench/report.hpp"

namespace bench {

constexpr int kNodes = 3, kNodeBurst = 300;  // node-aware instances; claims at once over them
constexpr int kNodeRounds = 5;               // their bursts, alternating with a single-node instance

struct NodeAware {
  std::vector<double> create_n, create_s;  // each round's create burst, seconds: node-aware, single-node
  std::vector<double> cpu_n, cpu_s;        // the provisioners' CPU in it (the instances' summed)
};

NodeAware RunNodeAware(const Places& at);

void ReportNodeAware(const NodeAware& n, Report* rep, picojson::object* json);

}  // namespace bench
