// Several provisioner instances, one per "node" (each its own NODE_NAME and root), against
// one fake API server with the DaemonSet's RBAC: what the node-aware end-to-end tests share.
#pragma once
#include <sys/stat.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "test/support/harness.hpp"

namespace harness {

constexpr const char* kClaims = "/api/v1/namespaces/default/persistentvolumeclaims/";

// One fake API server with the DaemonSet's RBAC (or the one in `rbac_yaml`: an older version's,
// a cluster admin's own), and a root directory per node.
// The DaemonSet's CAPACITY_PROVISIONER_NAME, which Start gives every instance (as shipped), and
// the provisioner of manifests/daemonset/storageclass.yaml.
inline constexpr const char* kCapacityProvisioner = "hostpath.hostpath-provisioner.io";

struct Nodes {
  TempDir tmp;
  std::unique_ptr<FakeApi> api;
  std::map<std::string, std::unique_ptr<Provisioner>> instances;
  // Settings every instance Start and StartShared start gets (its own env wins), e.g.
  // SMALL_CLUSTER_NODES.
  std::map<std::string, std::string> env;

  explicit Nodes(std::vector<std::string> fake_args = {}, const std::string& rbac_yaml = "manifests/daemonset/rbac.yaml");
  std::string Root(const std::string& node) { return tmp.path() + "/" + node; }
  void Start(const std::string& node, std::map<std::string, std::string> env = {});
  // Every instance's PV_DIR is SharedRoot(), as on real nodes, each in a mount namespace of its
  // own where its node's directory, Root(node), is bind-mounted there. Needs root (see CanShare).
  std::string SharedRoot() { return tmp.path() + "/pv"; }
  static bool CanShare() { return ::geteuid() == 0; }
  void StartShared(const std::string& node, std::map<std::string, std::string> env = {});
  void Claim(const std::string& name, const std::string& cls, const std::string& ann_key = "",
             const std::string& node = "");
  // What the scheduler does for a WaitForFirstConsumer claim once a pod using it is placed.
  void SelectNode(const std::string& claim, const std::string& node);
  picojson::value ClaimJson(const std::string& name) { return api->Claim("default", name); }
  std::string VolumeOf(const std::string& claim);
  bool WaitBound(const std::string& claim) { return Eventually([&] { return Phase(ClaimJson(claim)) == "Bound"; }); }
  int Events(const std::string& claim, const std::string& reason, const std::string& part = "");
};

// The DaemonSet's RBAC less what `drop` names: "role" leaves out the Role and RoleBinding of
// the dispatch Lease (as the RBAC of versions before the dispatcher: an image-only upgrade
// keeps it), "claim patch" takes patch out of the claims' rule, "node list" list out of the
// nodes' (as the RBAC of the versions before SMALL_CLUSTER_NODES). Written to `dir`/rbac.yaml; its path.
std::string RbacWithout(const std::string& dir, const std::string& drop);

// The node a PV's required node affinity names ("" when it has none, or another shape).
std::string AffinityNode(const picojson::value& pv);

std::string Annotation(const picojson::value& obj, const std::string& key);

std::string WffcClassYaml(const std::string& name, const std::string& params = "");

// A pod using `claim`, placed on `node` if given (nodeSelector).
std::string PodYaml(const std::string& name, const std::string& claim, const std::string& node = "");

std::string PodNode(FakeApi& api, const std::string& pod);

}  // namespace harness
