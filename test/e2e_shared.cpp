// End to end: several node-aware instances (the DaemonSet) on one root that every host sees,
// as a network share is: the orphan scan of one never removes a directory another just made.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include "test/fault_harness.hpp"
#include "test/nodes_harness.hpp"

using namespace harness;

namespace {

bool Ready(Provisioner& p) {
  return Eventually([&] { return p.Http("/readyz").code == 200; });
}

// Watches of `resource` the provisioner opened after the request log was reset.
size_t WatchesOf(FakeApi& api, const std::string& resource) {
  return faults::Filter(faults::Requests(api), faults::kProvisionerUser, "watch", resource).size();
}

}  // namespace

TEST_CASE("orphan scan: a directory another instance made, its PV create held back, is kept", "[e2e][shared]") {
  Nodes n;
  const std::string root = n.tmp.path() + "/share";
  ::mkdir(root.c_str(), 0755);
  // node-b's instance scans for orphans every second, with a claim cache that misses the
  // claim: its claims watch, dropped, is held back for a while on its way back.
  Provisioner b(*n.api, root, {{"NODE_NAME", "node-b"}, {"RESYNC_PERIOD", "1"}});
  REQUIRE(Ready(b));
  REQUIRE(faults::Control(*n.api, "/fake/reset-requests"));
  REQUIRE(faults::Inject(*n.api, {"watch", "persistentvolumeclaims", 500, 1, 0, 20000}));
  REQUIRE(faults::Control(*n.api, "/fake/drop-watches"));
  // Its other watches are back: so is the claims one, held (the fault is taken).
  REQUIRE(Eventually([&] { return WatchesOf(*n.api, "persistentvolumes") > 0 && WatchesOf(*n.api, "storageclasses") > 0; }));

  Provisioner a(*n.api, root, {{"NODE_NAME", "node-a"}});
  REQUIRE(Ready(a));
  // node-a's instance makes the directory, then its PV create is held back 4 s.
  REQUIRE(faults::Inject(*n.api, {"create", "persistentvolumes", 0, 1, 0, 4000}));
  n.Claim("fresh", "hostpath", "hostpath-provisioner.io/node", "node-a");
  REQUIRE(n.WaitBound("fresh"));
  const std::string pv = n.VolumeOf("fresh"), dir = root + "/default-fresh-" + pv;
  CHECK(Exists(dir));
  CHECK_THAT(b.Log(), !Catch::Contains("removed orphaned directory " + dir));
}
