// The bodies of nodes_harness.hpp (the contracts are there).
#include "test/support/nodes_harness.hpp"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace harness {

Nodes::Nodes(std::vector<std::string> fake_args, const std::string& rbac_yaml) {
  ::setenv("RBAC_YAML", rbac_yaml.c_str(), 1);
  api = std::make_unique<FakeApi>(tmp.path() + "/api", fake_args);
  ::unsetenv("RBAC_YAML");
  api->CreateYaml(ClassYaml("hostpath", "Delete"));
}

void Nodes::Start(const std::string& node, std::map<std::string, std::string> env) {
  ::mkdir(Root(node).c_str(), 0755);
  env.emplace("NODE_NAME", node);
  env.emplace("CAPACITY_PROVISIONER_NAME", kCapacityProvisioner);  // as manifests/daemonset/ sets it
  env.insert(this->env.begin(), this->env.end());
  instances[node] = std::make_unique<Provisioner>(*api, Root(node), env);
}

void Nodes::StartShared(const std::string& node, std::map<std::string, std::string> env) {
  ::mkdir(Root(node).c_str(), 0755);
  ::mkdir(SharedRoot().c_str(), 0755);
  env.emplace("NODE_NAME", node);
  env.emplace("CAPACITY_PROVISIONER_NAME", kCapacityProvisioner);
  env.emplace("NODE_ROOT", Root(node));
  env.insert(this->env.begin(), this->env.end());
  instances[node] = std::make_unique<Provisioner>(
      *api, SharedRoot(), env, std::vector<std::string>{},
      std::vector<std::string>{"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                               "mount --bind \"$NODE_ROOT\" \"$PV_DIR\" && exec \"$0\" \"$@\""});
}

void Nodes::Claim(const std::string& name, const std::string& cls, const std::string& ann_key,
                  const std::string& node) {
  std::string yaml = ClaimYaml("default", name, cls);
  if (!ann_key.empty())
    yaml.replace(yaml.find("\n  namespace:"), 0, "\n  annotations:\n    " + ann_key + ": " + node);
  api->CreateYaml(yaml);
}

void Nodes::SelectNode(const std::string& claim, const std::string& node) {
  Reply r = api->Call("PATCH", kClaims + claim,
                      "{\"metadata\":{\"annotations\":{\"volume.kubernetes.io/selected-node\":\"" + node + "\"}}}",
                      "application/merge-patch+json");
  REQUIRE(r.code == 200);
}

std::string Nodes::VolumeOf(const std::string& claim) {
  picojson::value c = ClaimJson(claim);
  return c.is<picojson::object>() && c.get("spec").get("volumeName").is<std::string>()
             ? c.get("spec").get("volumeName").to_str()
             : "";
}

int Nodes::Events(const std::string& claim, const std::string& reason, const std::string& part) {
  int n = 0;
  for (const auto& e : api->EventsAbout("default", claim))
    if (e.get("reason").to_str() == reason && e.get("message").to_str().find(part) != std::string::npos) ++n;
  return n;
}

std::string AffinityNode(const picojson::value& pv) {
  const picojson::value& terms = pv.get("spec").get("nodeAffinity").get("required").get("nodeSelectorTerms");
  if (!terms.is<picojson::array>() || terms.get<picojson::array>().size() != 1) return "";
  const picojson::value& exprs = terms.get(0).get("matchExpressions");
  if (!exprs.is<picojson::array>() || exprs.get<picojson::array>().size() != 1) return "";
  const picojson::value& e = exprs.get(0);
  if (e.get("key").to_str() != "kubernetes.io/hostname" || e.get("operator").to_str() != "In") return "";
  const picojson::value& values = e.get("values");
  return values.is<picojson::array>() && values.get<picojson::array>().size() == 1 ? values.get(0).to_str() : "";
}

std::string Annotation(const picojson::value& obj, const std::string& key) {
  const picojson::value& v = obj.get("metadata").get("annotations").get(key);
  return v.is<std::string>() ? v.get<std::string>() : "";
}

std::string WffcClassYaml(const std::string& name, const std::string& params) {
  std::string yaml = ClassYaml(name, "Delete", "hostpath-provisioner.io/hostpath", params);
  yaml.replace(yaml.find("Immediate"), 9, "WaitForFirstConsumer");
  return yaml;
}

std::string PodYaml(const std::string& name, const std::string& claim, const std::string& node) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  namespace: default\nspec:\n" +
         (node.empty() ? "" : "  nodeSelector:\n    kubernetes.io/hostname: " + node + "\n") +
         "  containers:\n  - name: app\n    image: busybox\n    volumeMounts:\n    - name: data\n      mountPath: /data\n"
         "  volumes:\n  - name: data\n    persistentVolumeClaim:\n      claimName: " + claim + "\n";
}

std::string PodNode(FakeApi& api, const std::string& pod) {
  Reply r = api.Get("/api/v1/namespaces/default/pods/" + pod);
  const picojson::value& n = r.json.get("spec").get("nodeName");
  return r.code == 200 && n.is<std::string>() ? n.get<std::string>() : "";
}

std::string RbacWithout(const std::string& dir, const std::string& drop) {
  const std::string text = ReadFile("manifests/daemonset/rbac.yaml");
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find("\n---\n", start);
    const std::string doc = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const bool lease_role = doc.find("\nkind: Role\n") != std::string::npos || doc.find("\nkind: RoleBinding\n") != std::string::npos;
    if (!(drop == "role" && lease_role)) out += (out.empty() ? "" : "\n---\n") + doc;
    if (end == std::string::npos) break;
    start = end + 5;
  }
  if (drop == "claim patch") {
    const std::string verbs = "resources: [persistentvolumeclaims]\n    verbs: [get, list, watch, patch]";
    const size_t at = out.find(verbs);
    REQUIRE(at != std::string::npos);
    out.replace(at, verbs.size(), "resources: [persistentvolumeclaims]\n    verbs: [get, list, watch]");
  }
  if (drop == "node list") {
    const std::string verbs = "resources: [nodes]\n    verbs: [get, list]";
    const size_t at = out.find(verbs);
    REQUIRE(at != std::string::npos);
    out.replace(at, verbs.size(), "resources: [nodes]\n    verbs: [get]");
  }
  REQUIRE(out != text);
  WriteFile(dir + "/rbac.yaml", out);
  return dir + "/rbac.yaml";
}

}  // namespace harness
