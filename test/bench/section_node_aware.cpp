// The bodies of section_node_aware.hpp (the contracts are there).
#include "test/bench/section_node_aware.hpp"

#include <cstdio>

#include "test/bench/bursts.hpp"
#include "test/bench/provisioner.hpp"
#include "test/fake/fake_kubelet.hpp"

namespace bench {

NodeAware RunNodeAware(const Places& at) {
  std::printf("bench: %d rounds of %d claims at once, over %d node-aware instances and on a single-node one\n", kNodeRounds,
              kNodeBurst, kNodes);
  std::fflush(stdout);
  NodeAware out;
  Fake fake_n(at.work + "/api-nodes", {}, "manifests/daemonset/rbac.yaml"), fake_s(at.work + "/api-single-node");
  fake_n.CreateClass("hostpath-wffc", "WaitForFirstConsumer");
  Target nodes{"node-aware", &fake_n, {}, {}, nullptr, "hostpath-wffc", kNodes};
  std::vector<Provisioner> instances;
  for (int i = 0; i < kNodes; ++i) {
    std::string node = "node-" + std::to_string(i);
    nodes.pv_dirs.push_back(MakeDir(at.volumes + "/pv-" + node));
    instances.push_back(StartProvisioner(fake_n, nodes.pv_dirs.back(), at.work + "/provisioner-" + node + ".log",
                                         {{"NODE_NAME", node}, {"LEADER_ELECT_LEASE_DURATION", "6"}}));
    nodes.provisioners.push_back(instances.back().proc->pid());
  }
  for (int i = 0; i < kNodes; ++i) {  // as their kubelets register them: the dispatcher counts them
    Reply r = fake_n.Admin()->Call("POST", "/api/v1/nodes", fake_kubelet::NodeJson("node-" + std::to_string(i)));
    if (r.code != 201) throw Failure("register node-" + std::to_string(i) + ": " + std::to_string(r.code) + " " + r.body);
  }
  WaitSmallClusterSettled(instances);  // a small cluster: every instance watches every claim
  std::string pv_s = MakeDir(at.volumes + "/pv-single-node");
  Provisioner single = StartProvisioner(fake_s, pv_s, at.work + "/provisioner-single-node.log");
  Target one{"single-node", &fake_s, {pv_s}, {single.proc->pid()}};
  Alternate(nodes, one, kNodeBurst, kNodeRounds, [&](const Target& t, bool create, const Burst& b) {
    if (!create) return;
    (t.nodes > 0 ? out.create_n : out.create_s).push_back(b.seconds);
    (t.nodes > 0 ? out.cpu_n : out.cpu_s).push_back(b.cpu_seconds);
  });
  return out;
}

void ReportNodeAware(const NodeAware& n, Report* rep, picojson::object* json) {
  auto median = [](const std::vector<double>& v) { return Percentile(v, 0.5); };
  rep->Section(std::to_string(kNodeBurst) + " claims at once, node-aware (" + std::to_string(kNodes) +
               " instances, WaitForFirstConsumer, " + std::to_string(kNodeBurst / kNodes) +
               " per node) / single-node (Immediate), " + std::to_string(n.create_n.size()) + " rounds (medians)");
  double ratio = median(n.create_n) / median(n.create_s);
  rep->Add("create until all Bound: node-aware / single-node",
           Fmt("%.3f", median(n.create_n)) + Fmt(" / %.3f s", median(n.create_s)) + Fmt(" = %.2fx", ratio), "<= 1x per claim",
           ratio <= 1);
  (*json)["create_seconds_node_aware"] = Array(n.create_n);  // kNodeBurst claims over kNodes instances
  (*json)["create_seconds_single_node"] = Array(n.create_s);
  (*json)["create_cpu_seconds_node_aware"] = Array(n.cpu_n);  // the instances' together
  (*json)["create_cpu_seconds_single_node"] = Array(n.cpu_s);
}

}  // namespace bench
