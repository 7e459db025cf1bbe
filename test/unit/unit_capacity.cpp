// Storage capacity (decide/capacity.hpp): which classes get a figure, the figure, the object's
// name, when a new figure is written; CAPACITY_PROVISIONER_NAME's checks; the object's JSON.
#include <catch2/catch.hpp>

#include <picojson.h>

#include <map>

#include "base/config.hpp"
#include "decide/capacity.hpp"
#include "decide/names.hpp"
#include "decide/reconcile.hpp"
#include "kube/k8s_json.hpp"
#include "test/support/decisions_fixture.hpp"

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20, kGiB = uint64_t{1} << 30;

Config CapacityConfig() {
  Config c = TestConfig("node-a");
  c.capacity_provisioner_name = "hostpath.example.com";
  return c;
}

StorageClass CapacityClass(const std::string& binding = "WaitForFirstConsumer") {
  StorageClass sc = OurClass(binding);
  sc.provisioner = "hostpath.example.com";
  return sc;
}

Result<Config> Parse(std::map<std::string, std::string> env) {
  return ParseConfig({}, [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

TEST_CASE("only WaitForFirstConsumer classes of the capacity name get figures, in node-aware mode", "[capacity]") {
  const Config cfg = CapacityConfig();
  CHECK(ClassGetsCapacity(cfg, CapacityClass()));
  CHECK_FALSE(ClassGetsCapacity(cfg, CapacityClass("Immediate")));  // the scheduler does not place those claims
  CHECK_FALSE(ClassGetsCapacity(cfg, OurClass("WaitForFirstConsumer")));  // PROVISIONER_NAME's: no CSIDriver can carry it
  StorageClass other = CapacityClass();
  other.provisioner = "rancher.io/local-path";
  CHECK_FALSE(ClassGetsCapacity(cfg, other));
  CHECK_FALSE(ClassGetsCapacity(TestConfig("node-a"), CapacityClass()));  // not configured
  Config single = CapacityConfig();
  single.node_name.clear();
  CHECK_FALSE(ClassGetsCapacity(single, CapacityClass()));
}

TEST_CASE("the second name is served like the first: claims, classes and the PVs it makes", "[capacity]") {
  const Config cfg = CapacityConfig();
  CHECK(cfg.Ours("hostpath.example.com"));
  CHECK(cfg.Ours(cfg.provisioner_name));
  CHECK_FALSE(cfg.Ours(""));
  CHECK_FALSE(cfg.Ours("hostpath.example.org"));
  CHECK_FALSE(TestConfig("node-a").Ours(""));  // no second name: "" is nobody's
  // A PV records its class's name, so that an install that recreates its class under the
  // other name still removes and expands the volumes made before.
  Claim claim;
  claim.meta.name = "data";
  claim.meta.namespace_ = "apps";
  claim.meta.uid = "u-1";
  claim.storage_class_name = "hostpath";
  claim.storage_request = "1Gi";
  claim.meta.annotations[ann::kStorageProvisioner] = "hostpath.example.com";
  CHECK(ClaimIsOurs(cfg, claim));
  StorageClass sc = CapacityClass();
  ClassParameters params;
  REQUIRE(ParseClassParameters(cfg, sc, &params).empty());
  Volume v = BuildVolume(cfg, claim, sc, params);
  CHECK(v.meta.annotations[ann::kProvisionedBy] == "hostpath.example.com");
  CHECK(DecideVolume(cfg, v, &sc).reason != "not provisioned by us");
}

TEST_CASE("the figure: free space, less unused promises without overcommit; any size without the check", "[capacity]") {
  ClassParameters p;
  p.overcommit = true;
  CHECK(CapacityFor(p, 10 * kGiB, 4 * kGiB).capacity == 10 * kGiB);
  CHECK_FALSE(CapacityFor(p, 10 * kGiB, 4 * kGiB).unlimited);
  p.overcommit = false;
  CHECK(CapacityFor(p, 10 * kGiB, 4 * kGiB).capacity == 6 * kGiB);
  CHECK(CapacityFor(p, 3 * kGiB, 4 * kGiB).capacity == 0);  // promised more than is free
  p.check_space = false;
  CHECK(CapacityFor(p, 3 * kGiB, 0).unlimited);
}

TEST_CASE("a figure is written when it moved more than 1% and 1 MiB, or at all when prompted", "[capacity]") {
  CHECK(CapacityWorthWriting(std::nullopt, 0, false));  // none yet
  CHECK_FALSE(CapacityWorthWriting(100 * kGiB, 100 * kGiB, true));
  CHECK_FALSE(CapacityWorthWriting(100 * kGiB, 100 * kGiB - 512 * kMiB, false));  // 0.5%: logs trickling
  CHECK(CapacityWorthWriting(100 * kGiB, 100 * kGiB - 2 * kGiB, false));
  CHECK(CapacityWorthWriting(100 * kGiB, 100 * kGiB + 2 * kGiB, false));
  CHECK(CapacityWorthWriting(100 * kGiB, 100 * kGiB - 512 * kMiB, true));  // a volume went, or a claim did not fit
  // Near full, small moves count: 1% of 50 MiB is less than the 1 MiB floor.
  CHECK_FALSE(CapacityWorthWriting(50 * kMiB, 50 * kMiB - kMiB / 2, false));
  CHECK(CapacityWorthWriting(50 * kMiB, 48 * kMiB, false));
  CHECK(CapacityWorthWriting(0, 2 * kMiB, false));
}

TEST_CASE("one object per node and class, under a short name of both", "[capacity]") {
  const std::string a = CapacityObjectName("node-a", "hostpath");
  CHECK(a.rfind("hostpath-", 0) == 0);
  CHECK(a.size() == 9 + 16);
  CHECK(a == CapacityObjectName("node-a", "hostpath"));
  CHECK(a != CapacityObjectName("node-b", "hostpath"));
  CHECK(a != CapacityObjectName("node-a", "hostpath-fast"));
  CHECK(CapacityObjectName(std::string(253, 'n'), std::string(253, 'c')).size() == 25);
  CHECK(CapacitySelector("node-a") == "hostpath-provisioner.io/node=node-a");
}

TEST_CASE("CAPACITY_PROVISIONER_NAME: a CSIDriver's name, node-aware mode only, not PROVISIONER_NAME", "[capacity][config]") {
  Result<Config> c = Parse({{"NODE_NAME", "n1"}, {"CAPACITY_PROVISIONER_NAME", "hostpath.hostpath-provisioner.io"}});
  REQUIRE(c.ok());
  CHECK(c->capacity_provisioner_name == "hostpath.hostpath-provisioner.io");
  CHECK(c->capacity_interval_seconds == 10);
  CHECK(Parse({{"NODE_NAME", "n1"}, {"CAPACITY_INTERVAL", "2"}}).value().capacity_interval_seconds == 2);
  CHECK(Parse({}).value().capacity_provisioner_name.empty());
  struct Row {
    std::map<std::string, std::string> env;
    const char* says;
  } bad[] = {
      {{{"NODE_NAME", "n1"}, {"CAPACITY_PROVISIONER_NAME", "hostpath-provisioner.io/hostpath"}},
       "CAPACITY_PROVISIONER_NAME (--capacity-provisioner-name) must be a CSIDriver's name"},
      {{{"NODE_NAME", "n1"}, {"CAPACITY_PROVISIONER_NAME", std::string(254, 'a')}}, "a DNS subdomain"},
      {{{"NODE_NAME", "n1"}, {"CAPACITY_PROVISIONER_NAME", "-a.b"}}, "must be a CSIDriver's name"},
      {{{"NODE_NAME", "n1"}, {"CAPACITY_PROVISIONER_NAME", "Upper.case"}}, "must be a CSIDriver's name"},
      {{{"CAPACITY_PROVISIONER_NAME", "hostpath.hostpath-provisioner.io"}}, "needs NODE_NAME (--node-name)"},
      {{{"NODE_NAME", "n1"}, {"PROVISIONER_NAME", "a.b"}, {"CAPACITY_PROVISIONER_NAME", "a.b"}},
       "must differ from PROVISIONER_NAME"},
      {{{"NODE_NAME", "n1"}, {"CAPACITY_INTERVAL", "0"}}, "CAPACITY_INTERVAL (--capacity-interval) must be a whole number from 1"},
  };
  for (const Row& row : bad) {
    Result<Config> r = Parse(row.env);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains(row.says));
  }
}

TEST_CASE("the CSIStorageCapacity written and read back", "[capacity][k8s_json]") {
  StorageCapacity c;
  c.meta.name = "hostpath-0123456789abcdef";
  c.meta.namespace_ = "kube-system";
  c.meta.labels = {{"hostpath-provisioner.io/node", "node-a"}};
  c.storage_class = "hostpath";
  c.node = "node-a";
  c.capacity = "1073741824";
  c.owner_node_uid = "n-uid";
  const std::string text = StorageCapacityToJson(c);
  CHECK(text ==
        R"({"apiVersion":"storage.k8s.io\/v1","capacity":"1073741824","kind":"CSIStorageCapacity",)"
        R"("metadata":{"labels":{"hostpath-provisioner.io\/node":"node-a"},"name":"hostpath-0123456789abcdef",)"
        R"("namespace":"kube-system","ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"node-a","uid":"n-uid"}]},)"
        R"("nodeTopology":{"matchLabels":{"kubernetes.io\/hostname":"node-a"}},"storageClassName":"hostpath"})");
  Result<StorageCapacity> back = FromJsonText<StorageCapacity>(text);
  REQUIRE(back.ok());
  CHECK(back->storage_class == "hostpath");
  CHECK(back->node == "node-a");
  CHECK(back->capacity == "1073741824");
  CHECK(back->maximum_volume_size.empty());
  CHECK(back->owner_node_uid == "n-uid");
  // The server may write quantities in its own form, or as numbers.
  Result<StorageCapacity> number = FromJsonText<StorageCapacity>(
      R"({"kind":"CSIStorageCapacity","metadata":{"name":"x"},"storageClassName":"s","capacity":1024,"maximumVolumeSize":"1Gi"})");
  REQUIRE(number.ok());
  CHECK(number->capacity == "1024");
  CHECK(number->maximum_volume_size == "1Gi");
  CHECK(number->node.empty());
  Result<CsiDriver> driver = FromJsonText<CsiDriver>(R"({"kind":"CSIDriver","metadata":{"name":"d"},"spec":{"storageCapacity":true}})");
  REQUIRE(driver.ok());
  CHECK(driver->storage_capacity);
}
