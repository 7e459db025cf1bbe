// The bodies of capacity_bed.hpp (the contracts are there).
#include "test/support/capacity_bed.hpp"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>

namespace harness {

const std::string kCapacityObjects = "/apis/storage.k8s.io/v1/namespaces/kube-system/csistoragecapacities";

std::map<std::string, picojson::value> Objects(Nodes& n, const std::string& cls) {
  std::map<std::string, picojson::value> out;
  Reply r = n.api->Get(kCapacityObjects);
  if (r.code != 200) return out;
  for (const picojson::value& item : r.json.get("items").get<picojson::array>()) {
    if (item.get("storageClassName").to_str() != cls) continue;
    const picojson::value& node = item.get("nodeTopology").get("matchLabels").get("kubernetes.io/hostname");
    if (node.is<std::string>()) out[node.get<std::string>()] = item;
  }
  return out;
}

double Capacity(Nodes& n, const std::string& node, const std::string& cls) {
  auto all = Objects(n, cls);
  auto it = all.find(node);
  return it == all.end() ? -1 : std::stod(it->second.get("capacity").to_str());
}

std::string Unschedulable(Nodes& n, const std::string& pod) {
  Reply r = n.api->Get("/api/v1/namespaces/default/pods/" + pod);
  if (r.code != 200 || !r.json.get("status").get("conditions").is<picojson::array>()) return "";
  for (const picojson::value& c : r.json.get("status").get("conditions").get<picojson::array>())
    if (c.get("type").to_str() == "PodScheduled" && c.get("status").to_str() == "False") return c.get("message").to_str();
  return "";
}

void FillMiB(const std::string& path, int mib) {
  std::ofstream f(path, std::ios::binary);
  std::string chunk(kCapMiB, '\0');
  for (int i = 0; i < mib; ++i) f.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
}

void InstallCapacityClass(Nodes& n, bool driver) {
  REQUIRE(n.api->Delete("/apis/storage.k8s.io/v1/storageclasses/hostpath").code == 200);
  n.api->CreateYaml(ReadFile("manifests/daemonset/storageclass.yaml"));
  if (driver) n.api->CreateYaml(ReadFile("manifests/daemonset/csidriver.yaml"));
  for (const char* node : {"node-a", "node-b"}) n.api->RegisterNode(node);
}

TwoDisks::TwoDisks(const char* size_a, const char* size_b, const std::string& rbac) : n({}, rbac) {
  InstallCapacityClass(n);
  ::mkdir(n.Root("node-a").c_str(), 0755);
  ::mkdir(n.Root("node-b").c_str(), 0755);
  a = std::make_unique<Tmpfs>(n.Root("node-a"), size_a);
  b = std::make_unique<Tmpfs>(n.Root("node-b"), size_b);
  mounted = a->mounted && b->mounted;
}

void TwoDisks::Start(const std::map<std::string, std::string>& env) {
  for (const char* node : {"node-a", "node-b"}) n.Start(node, env);
  REQUIRE(Eventually([&] { return Objects(n).size() == 2; }));
}

}  // namespace harness
