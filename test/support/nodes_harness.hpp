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

// One fake API server with the DaemonSet's RBAC, and a root directory per node.
struct Nodes {
  TempDir tmp;
  std::unique_ptr<FakeApi> api;
  std::map<std::string, std::unique_ptr<Provisioner>> instances;

  explicit Nodes(std::vector<std::string> fake_args = {}) {
    ::setenv("RBAC_YAML", "manifests/daemonset/rbac.yaml", 1);
    api = std::make_unique<FakeApi>(tmp.path() + "/api", fake_args);
    ::unsetenv("RBAC_YAML");
    api->CreateYaml(ClassYaml("hostpath", "Delete"));
  }
  std::string Root(const std::string& node) { return tmp.path() + "/" + node; }
  void Start(const std::string& node, std::map<std::string, std::string> env = {}) {
    ::mkdir(Root(node).c_str(), 0755);
    env.emplace("NODE_NAME", node);
    instances[node] = std::make_unique<Provisioner>(*api, Root(node), env);
  }
  // Every instance's PV_DIR is SharedRoot(), as on real nodes, each in a mount namespace of its
  // own where its node's directory, Root(node), is bind-mounted there. Needs root (see CanShare).
  std::string SharedRoot() { return tmp.path() + "/pv"; }
  static bool CanShare() { return ::geteuid() == 0; }
  void StartShared(const std::string& node, std::map<std::string, std::string> env = {}) {
    ::mkdir(Root(node).c_str(), 0755);
    ::mkdir(SharedRoot().c_str(), 0755);
    env.emplace("NODE_NAME", node);
    env.emplace("NODE_ROOT", Root(node));
    instances[node] = std::make_unique<Provisioner>(
        *api, SharedRoot(), env, std::vector<std::string>{},
        std::vector<std::string>{"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                                 "mount --bind \"$NODE_ROOT\" \"$PV_DIR\" && exec \"$0\" \"$@\""});
  }
  void Claim(const std::string& name, const std::string& cls, const std::string& ann_key = "",
             const std::string& node = "") {
    std::string yaml = ClaimYaml("default", name, cls);
    if (!ann_key.empty())
      yaml.replace(yaml.find("\n  namespace:"), 0, "\n  annotations:\n    " + ann_key + ": " + node);
    api->CreateYaml(yaml);
  }
  // What the scheduler does for a WaitForFirstConsumer claim once a pod using it is placed.
  void SelectNode(const std::string& claim, const std::string& node) {
    Reply r = api->Call("PATCH", kClaims + claim,
                        "{\"metadata\":{\"annotations\":{\"volume.kubernetes.io/selected-node\":\"" + node + "\"}}}",
                        "application/merge-patch+json");
    REQUIRE(r.code == 200);
  }
  picojson::value ClaimJson(const std::string& name) { return api->Claim("default", name); }
  std::string VolumeOf(const std::string& claim) {
    picojson::value c = ClaimJson(claim);
    return c.is<picojson::object>() && c.get("spec").get("volumeName").is<std::string>()
               ? c.get("spec").get("volumeName").to_str()
               : "";
  }
  bool WaitBound(const std::string& claim) { return Eventually([&] { return Phase(ClaimJson(claim)) == "Bound"; }); }
  int Events(const std::string& claim, const std::string& reason, const std::string& part = "") {
    int n = 0;
    for (const auto& e : api->EventsAbout("default", claim))
      if (e.get("reason").to_str() == reason && e.get("message").to_str().find(part) != std::string::npos) ++n;
    return n;
  }
};

// The node a PV's required node affinity names ("" when it has none, or another shape).
inline std::string AffinityNode(const picojson::value& pv) {
  const picojson::value& terms = pv.get("spec").get("nodeAffinity").get("required").get("nodeSelectorTerms");
  if (!terms.is<picojson::array>() || terms.get<picojson::array>().size() != 1) return "";
  const picojson::value& exprs = terms.get(0).get("matchExpressions");
  if (!exprs.is<picojson::array>() || exprs.get<picojson::array>().size() != 1) return "";
  const picojson::value& e = exprs.get(0);
  if (e.get("key").to_str() != "kubernetes.io/hostname" || e.get("operator").to_str() != "In") return "";
  const picojson::value& values = e.get("values");
  return values.is<picojson::array>() && values.get<picojson::array>().size() == 1 ? values.get(0).to_str() : "";
}

inline std::string Annotation(const picojson::value& obj, const std::string& key) {
  const picojson::value& v = obj.get("metadata").get("annotations").get(key);
  return v.is<std::string>() ? v.get<std::string>() : "";
}

inline std::string WffcClassYaml(const std::string& name, const std::string& params = "") {
  std::string yaml = ClassYaml(name, "Delete", "hostpath-provisioner.io/hostpath", params);
  yaml.replace(yaml.find("Immediate"), 9, "WaitForFirstConsumer");
  return yaml;
}

// A pod using `claim`, placed on `node` if given (nodeSelector).
inline std::string PodYaml(const std::string& name, const std::string& claim, const std::string& node = "") {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  namespace: default\nspec:\n" +
         (node.empty() ? "" : "  nodeSelector:\n    kubernetes.io/hostname: " + node + "\n") +
         "  containers:\n  - name: app\n    image: busybox\n    volumeMounts:\n    - name: data\n      mountPath: /data\n"
         "  volumes:\n  - name: data\n    persistentVolumeClaim:\n      claimName: " + claim + "\n";
}

inline std::string PodNode(FakeApi& api, const std::string& pod) {
  Reply r = api.Get("/api/v1/namespaces/default/pods/" + pod);
  const picojson::value& n = r.json.get("spec").get("nodeName");
  return r.code == 200 && n.is<std::string>() ? n.get<std::string>() : "";
}

}  // namespace harness
