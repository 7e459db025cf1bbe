// End to end: the free-space check. The root is a small tmpfs made by the test (needs root:
// skipped, with a message, otherwise).
#include <catch2/catch.hpp>

#include <sys/mount.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "test/support/harness.hpp"
#include "test/support/tmpfs.hpp"

using namespace harness;

namespace {

constexpr const char* kClaims = "/api/v1/namespaces/default/persistentvolumeclaims/";

bool HasEvent(FakeApi& api, const std::string& claim, const std::string& reason, const std::string& part) {
  for (const auto& e : api.EventsAbout("default", claim))
    if (e.get("reason").to_str() == reason && e.get("message").to_str().find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("a claim that does not fit its root waits with an event naming both sizes, and binds once space frees up", "[e2e][space]") {
  TempDir tmp;
  Tmpfs fs(tmp.path() + "/pv", "10m");
  if (!fs.mounted) return;
  const std::string& pv_dir = fs.dir;
  FakeApi api(tmp.path() + "/api");
  api.CreateYaml(ClassYaml("hostpath", "Delete"));  // the default: overcommit
  api.CreateYaml(ClassYaml("strict", "Delete", "hostpath-provisioner.io/hostpath", "  overcommit: \"false\"\n"));
  api.CreateYaml(ClassYaml("unchecked", "Delete", "hostpath-provisioner.io/hostpath", "  checkFreeSpace: \"false\"\n"));
  Provisioner p(api, pv_dir);

  // Larger than the filesystem: refused, whatever else is there.
  api.CreateYaml(ClaimYaml("default", "huge", "hostpath", "20Mi"));
  REQUIRE(Eventually([&] { return HasEvent(api, "huge", "ProvisioningFailed", "not enough space: 20.0 MiB requested, 10.0 MiB available"); }));
  CHECK(ListDir(pv_dir).empty());
  // The default overcommits: two 6Mi claims on 10 MiB both bind.
  api.CreateYaml(ClaimYaml("default", "a", "hostpath", "6Mi"));
  api.CreateYaml(ClaimYaml("default", "b", "hostpath", "6Mi"));
  REQUIRE(Eventually([&] { return Phase(api.Claim("default", "a")) == "Bound" && Phase(api.Claim("default", "b")) == "Bound"; }));
  // A strict class counts what a and b were promised: 10 MiB free, less 12 MiB promised.
  api.CreateYaml(ClaimYaml("default", "c", "strict", "1Mi"));
  REQUIRE(Eventually([&] { return HasEvent(api, "c", "ProvisioningFailed", "less 12.0 MiB promised to 2 other volumes"); }));
  CHECK(Phase(api.Claim("default", "c")) == "Pending");
  // The advice is what a user can do: a pending claim's request cannot be edited, nor a class's parameters.
  const std::string room = "; free space on that filesystem or delete volumes no longer needed (retried at once when one "
                           "goes), or give the root a larger filesystem; or delete the claim and create it again with a "
                           "smaller request";
  CHECK(HasEvent(api, "huge", "ProvisioningFailed", "20.0 MiB requested, 10.0 MiB available" + room));
  CHECK(HasEvent(api, "c", "ProvisioningFailed", "promised to 2 other volumes)" + room + "; or create StorageClass strict "
                 "anew with parameter overcommit: \"true\" (parameters cannot be edited; deleting a class leaves its "
                 "claims and volumes alone)"));
  // Turned off, anything goes.
  api.CreateYaml(ClaimYaml("default", "d", "unchecked", "1Ti"));
  REQUIRE(Eventually([&] { return Phase(api.Claim("default", "d")) == "Bound"; }));
  REQUIRE(api.Delete(kClaims + std::string("d")).code == 200);
  // a and b go: c binds without waiting for its backoff.
  REQUIRE(api.Delete(kClaims + std::string("a")).code == 200);
  REQUIRE(api.Delete(kClaims + std::string("b")).code == 200);
  REQUIRE(Eventually([&] { return Phase(api.Claim("default", "c")) == "Bound"; }));
  CHECK(Phase(api.Claim("default", "huge")) == "Pending");
  CHECK(api.Denials().empty());
}

TEST_CASE("a strict class holds when claims arrive together: of four 6Mi claims on 10 MiB one binds, the others wait", "[e2e][space]") {
  TempDir tmp;
  Tmpfs fs(tmp.path() + "/pv", "10m");
  if (!fs.mounted) return;
  FakeApi api(tmp.path() + "/api");
  api.CreateYaml(ClassYaml("strict", "Delete", "hostpath-provisioner.io/hostpath", "  overcommit: \"false\"\n"));
  // Made before the provisioner starts, so that its first list hands all four to its four
  // workers at once (as after a restart, or a StatefulSet scaled up).
  const std::vector<std::string> names = {"r1", "r2", "r3", "r4"};
  for (const std::string& name : names) api.CreateYaml(ClaimYaml("default", name, "strict", "6Mi"));
  Provisioner p(api, fs.dir, {{"WORKERS", "4"}});
  int bound = 0, refused = 0;
  auto settled = [&] {
    bound = refused = 0;
    for (const std::string& name : names) {
      if (Phase(api.Claim("default", name)) == "Bound") ++bound;
      else if (HasEvent(api, name, "ProvisioningFailed", "not enough space: 6.0 MiB requested")) ++refused;
    }
    return bound + refused == 4;
  };
  REQUIRE(Eventually(settled));
  INFO("bound " << bound << ", refused " << refused);
  CHECK(bound == 1);
  CHECK(ListDir(fs.dir).size() == 1);
  CHECK(api.Denials().empty());
}

// Issue 45: a provision whose directory could not be made drops the room it reserved. Under a
// strict class on 10 MiB, an 8Mi claim cannot get its directory (the root is immutable) and is
// deleted; once the root is fixed, another 8Mi claim binds: nothing is still promised to the
// first.
TEST_CASE("a claim whose directory could not be made, then deleted, keeps no space: a later claim that fits binds", "[e2e][space]") {
  TempDir tmp;
  Tmpfs fs(tmp.path() + "/pv", "10m");
  if (!fs.mounted) return;
  FakeApi api(tmp.path() + "/api");
  api.CreateYaml(ClassYaml("strict", "Delete", "hostpath-provisioner.io/hostpath", "  overcommit: \"false\"\n"));
  Provisioner p(api, fs.dir);
  if (int e = SetImmutable(fs.dir, true); e != 0) {
    WARN("SKIPPED: cannot make a tmpfs immutable here: " << std::strerror(e));
    return;
  }
  api.CreateYaml(ClaimYaml("default", "blocked", "strict", "8Mi"));
  const bool failed = Eventually([&] { return HasEvent(api, "blocked", "ProvisioningFailed", "cannot make directory"); });
  REQUIRE(api.Delete(kClaims + std::string("blocked")).code == 200);
  REQUIRE(Eventually([&] { return api.Claim("default", "blocked").is<picojson::null>(); }));
  REQUIRE(SetImmutable(fs.dir, false) == 0);
  REQUIRE(failed);
  api.CreateYaml(ClaimYaml("default", "later", "strict", "8Mi"));
  INFO(p.Log());
  CHECK(Eventually([&] { return Phase(api.Claim("default", "later")) == "Bound"; }));
  CHECK(!HasEvent(api, "later", "ProvisioningFailed", "not enough space"));
  CHECK(api.Denials().empty());
}
