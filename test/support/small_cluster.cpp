// Small-cluster test helpers: the bodies (small_cluster.hpp has the contracts).
#include "test/support/small_cluster.hpp"

#include <dirent.h>

#include <catch2/catch.hpp>
#include <chrono>

namespace harness {

std::string NodeLabel(const picojson::value& obj) {
  const picojson::value& labels = obj.get("metadata").get("labels");
  if (!labels.is<picojson::object>() || !labels.contains("hostpath-provisioner.io/node")) return "";
  return labels.get("hostpath-provisioner.io/node").to_str();
}

std::string Dispatcher(Nodes& n) {
  for (auto& entry : n.instances)
    if (entry.second && Metric(*entry.second, "hostpath_provisioner_dispatcher") == 1) return entry.first;
  return "";
}

bool AllWatch(Nodes& n, int every) {
  for (auto& entry : n.instances)
    if (Metric(*entry.second, "hostpath_provisioner_every_claim_watched") != every) return false;
  return true;
}

int EntriesStarting(const std::string& dir, const std::string& prefix) {
  int found = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) found += std::string(e->d_name).rfind(prefix, 0) == 0;
    ::closedir(d);
  }
  return found;
}

std::map<std::string, int> VolumesPerClaim(Nodes& n) {
  std::map<std::string, int> out;
  Reply pvs = n.api->Get("/api/v1/persistentvolumes");
  REQUIRE(pvs.code == 200);
  for (const auto& pv : pvs.json.get("items").get<picojson::array>())
    ++out[pv.get("spec").get("claimRef").get("name").to_str()];
  return out;
}

void MadeOnceOnTheirNodes(Nodes& n, const std::map<std::string, std::string>& claims,
                          const std::vector<std::string>& nodes) {
  for (const auto& entry : claims) {
    const std::string& claim = entry.first;  // (lambdas below: no structured binding in C++17)
    const std::string& node = entry.second;
    INFO(claim << " for " << node);
    REQUIRE(Eventually([&] { return Phase(n.ClaimJson(claim)) == "Bound"; }, std::chrono::seconds(60)));
    const std::string pv = n.VolumeOf(claim);
    CHECK(AffinityNode(n.api->Volume(pv)) == node);
    CHECK(Exists(n.Root(node) + "/default-" + claim + "-" + pv));
    for (const std::string& other : nodes)
      if (other != node) CHECK(EntriesStarting(n.Root(other), "default-" + claim + "-") == 0);
    CHECK(n.Events(claim, "ProvisioningSucceeded") == 1);
  }
  for (const auto& entry : VolumesPerClaim(n)) {
    INFO(entry.first);
    CHECK(entry.second == 1);
  }
}

}  // namespace harness
