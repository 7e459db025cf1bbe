// End to end: volume expansion. The fake API server plays Kubernetes 1.24's part (the claim's
// update validation, the PersistentVolumeClaimResize admission, the expand controller's
// ExternalExpanding event); the provisioner plays the external resizer's. The test of the
// free-space check on expansion mounts a small tmpfs (needs root: skipped, with a message,
// otherwise).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "test/support/harness.hpp"
#include "test/support/tmpfs.hpp"

using namespace harness;

namespace {

constexpr const char* kClaims = "/api/v1/namespaces/default/persistentvolumeclaims/";

std::string ExpandableClass(const std::string& name, bool allow, const std::string& params = "") {
  return ClassYaml(name, "Delete", "hostpath-provisioner.io/hostpath", params) +
         "allowVolumeExpansion: " + (allow ? "true" : "false") + "\n";
}

// Asks for `size` (a merge patch of the claim's request, as kubectl edit or patch does).
Reply AskFor(FakeApi& api, const std::string& claim, const std::string& size) {
  return api.Call("PATCH", kClaims + claim, R"({"spec":{"resources":{"requests":{"storage":")" + size + R"("}}}})",
                  "application/merge-patch+json");
}

std::string ClaimCapacity(FakeApi& api, const std::string& claim) {
  return api.Claim("default", claim).get("status").get("capacity").get("storage").to_str();
}
std::string VolumeCapacity(FakeApi& api, const picojson::value& claim) {
  return api.Volume(claim.get("spec").get("volumeName").to_str()).get("spec").get("capacity").get("storage").to_str();
}
bool HasCondition(const picojson::value& claim, const std::string& type) {
  const picojson::value& conditions = claim.get("status").get("conditions");
  if (!conditions.is<picojson::array>()) return false;
  for (const auto& c : conditions.get<picojson::array>())
    if (c.get("type").to_str() == type) return true;
  return false;
}

// The events about the claim, as "Type Reason: message" lines.
std::vector<std::string> Events(FakeApi& api, const std::string& claim) {
  std::vector<std::string> out;
  for (const auto& e : api.EventsAbout("default", claim))
    out.push_back(e.get("type").to_str() + " " + e.get("reason").to_str() + ": " + e.get("message").to_str());
  return out;
}
bool HasEvent(FakeApi& api, const std::string& claim, const std::string& start) {
  for (const std::string& e : Events(api, claim))
    if (e.rfind(start, 0) == 0) return true;
  return false;
}

}  // namespace

TEST_CASE("a claim that asks for more gets it: Resizing, then the PV's and the claim's capacity, with events", "[e2e][expand]") {
  TempDir tmp;
  FakeApi api(tmp.path() + "/api");
  api.CreateYaml(ExpandableClass("hostpath", true));
  api.CreateYaml(ExpandableClass("fixed", false));
  auto p = std::make_unique<Provisioner>(api, tmp.path());
  api.CreateYaml(ClaimYaml("default", "data", "hostpath", "1Mi"));
  api.CreateYaml(ClaimYaml("default", "stuck", "fixed", "1Mi"));
  REQUIRE(Eventually([&] { return Phase(api.Claim("default", "data")) == "Bound" && Phase(api.Claim("default", "stuck")) == "Bound"; }));
  const picojson::value bound = api.Claim("default", "data");
  const std::string dir = tmp.path() + "/default-data-" + bound.get("spec").get("volumeName").to_str();
  WriteFile(dir + "/kept", "data");

  REQUIRE(AskFor(api, "data", "2Mi").code == 200);
  REQUIRE(Eventually([&] { return ClaimCapacity(api, "data") == "2Mi"; }));
  CHECK(VolumeCapacity(api, bound) == "2Mi");
  CHECK_FALSE(HasCondition(api.Claim("default", "data"), "Resizing"));
  CHECK(ReadFile(dir + "/kept") == "data");
  REQUIRE(Eventually([&] { return HasEvent(api, "data", "Normal VolumeResizeSuccessful: Resize volume succeeded"); }));
  CHECK(HasEvent(api, "data", "Normal Resizing: Expanding volume " + bound.get("spec").get("volumeName").to_str() + " to 2Mi"));
  CHECK(HasEvent(api, "data", "Warning ExternalExpanding: Ignoring the PVC"));  // the expand controller's, as in 1.24
  // 1.24 without RecoverVolumeExpansionFailure drops the allocatedResources the provisioner sends.
  CHECK(api.Claim("default", "data").get("status").get("allocatedResources").is<picojson::null>());

  // Shrinking is refused by the API server; so is growing where the class does not allow it.
  CHECK(AskFor(api, "data", "1Mi").code == 422);
  CHECK(AskFor(api, "stuck", "2Mi").code == 403);
  CHECK(ClaimCapacity(api, "stuck") == "1Mi");

  // A crash after the PV got its new size, before the claim did: the next start finishes it.
  p.reset();
  REQUIRE(AskFor(api, "data", "3Mi").code == 200);
  REQUIRE(api.Call("PATCH", "/api/v1/persistentvolumes/" + bound.get("spec").get("volumeName").to_str(),
                   R"({"spec":{"capacity":{"storage":"3Mi"}}})", "application/merge-patch+json")
              .code == 200);
  p = std::make_unique<Provisioner>(api, tmp.path());
  REQUIRE(Eventually([&] { return ClaimCapacity(api, "data") == "3Mi"; }));
  CHECK(VolumeCapacity(api, bound) == "3Mi");
  CHECK_FALSE(HasCondition(api.Claim("default", "data"), "Resizing"));
  CHECK(api.Denials().empty());
}

TEST_CASE("an expansion that does not fit waits with a VolumeResizeFailed event, and completes once space frees up", "[e2e][expand]") {
  TempDir tmp;
  Tmpfs fs(tmp.path() + "/pv", "10m");
  if (!fs.mounted) return;
  const std::string& pv_dir = fs.dir;
  FakeApi api(tmp.path() + "/api");
  api.CreateYaml(ExpandableClass("hostpath", true));
  Provisioner p(api, pv_dir);
  api.CreateYaml(ClaimYaml("default", "data", "hostpath", "2Mi"));
  api.CreateYaml(ClaimYaml("default", "filler", "hostpath", "7Mi"));
  REQUIRE(Eventually([&] { return Phase(api.Claim("default", "data")) == "Bound" && Phase(api.Claim("default", "filler")) == "Bound"; }));
  const picojson::value filler = api.Claim("default", "filler");
  WriteFile(pv_dir + "/default-filler-" + filler.get("spec").get("volumeName").to_str() + "/blob", std::string(7 << 20, 'x'));

  // 3 MiB free, 6 MiB more asked for (overcommit, the default, counts only the growth).
  REQUIRE(AskFor(api, "data", "8Mi").code == 200);
  REQUIRE(Eventually([&] { return HasEvent(api, "data", "Warning VolumeResizeFailed: cannot grow volume"); }));
  bool named_sizes = false;
  for (const std::string& e : Events(api, "data"))
    named_sizes = named_sizes || (e.find("from 2.0 MiB to 8Mi") != std::string::npos &&
                                  e.find("not enough space: 6.0 MiB requested") != std::string::npos);
  CHECK(named_sizes);
  // The advice is what a user can do: Kubernetes 1.24 refuses to lower the request again.
  CHECK(HasEvent(api, "data", "Warning VolumeResizeFailed: cannot grow volume"));
  for (const std::string& e : Events(api, "data"))
    if (e.rfind("Warning VolumeResizeFailed", 0) == 0)
      CHECK_THAT(e, Catch::EndsWith("; free space on that filesystem or delete volumes no longer needed (retried at once "
                                    "when one goes), or give the root a larger filesystem"));
  const picojson::value waiting = api.Claim("default", "data");
  CHECK(HasCondition(waiting, "Resizing"));
  CHECK(ClaimCapacity(api, "data") == "2Mi");
  CHECK(VolumeCapacity(api, waiting) == "2Mi");

  // The filler goes, and its data with it: the expansion completes without waiting for a backoff.
  REQUIRE(api.Delete(kClaims + std::string("filler")).code == 200);
  REQUIRE(Eventually([&] { return ClaimCapacity(api, "data") == "8Mi"; }));
  CHECK(VolumeCapacity(api, waiting) == "8Mi");
  CHECK_FALSE(HasCondition(api.Claim("default", "data"), "Resizing"));
  CHECK(api.Denials().empty());
}

TEST_CASE("a strict class holds when expansions arrive together: of four 1Mi volumes asking for 6Mi on 10 MiB, one grows", "[e2e][expand]") {
  TempDir tmp;
  Tmpfs fs(tmp.path() + "/pv", "10m");
  if (!fs.mounted) return;
  FakeApi api(tmp.path() + "/api");
  api.CreateYaml(ExpandableClass("strict", true, "  overcommit: \"false\"\n"));
  const std::vector<std::string> names = {"g1", "g2", "g3", "g4"};
  auto p = std::make_unique<Provisioner>(api, fs.dir, std::map<std::string, std::string>{{"WORKERS", "4"}});
  for (const std::string& name : names) api.CreateYaml(ClaimYaml("default", name, "strict", "1Mi"));
  for (const std::string& name : names) REQUIRE(Eventually([&] { return Phase(api.Claim("default", name)) == "Bound"; }));
  // Asked for while the provisioner is down, so that its first list hands all four to its four
  // workers at once. Each alone fits: 6 MiB against 10 MiB free less the 3 MiB of the others.
  // A slow API server (every request answered 100 ms late) keeps the PVs' new sizes from
  // reaching the provisioner while its workers decide, as under load.
  p.reset();
  for (const std::string& name : names) REQUIRE(AskFor(api, name, "6Mi").code == 200);
  REQUIRE(api.Call("POST", "/fake/delay?ms=100").code == 200);
  p = std::make_unique<Provisioner>(api, fs.dir, std::map<std::string, std::string>{{"WORKERS", "4"}});
  int grown = 0, refused = 0;
  auto settled = [&] {
    grown = refused = 0;
    for (const std::string& name : names) {
      if (ClaimCapacity(api, name) == "6Mi") ++grown;
      else if (HasEvent(api, name, "Warning VolumeResizeFailed: cannot grow volume")) ++refused;
    }
    return grown + refused == 4;
  };
  REQUIRE(Eventually(settled));
  INFO("grown " << grown << ", refused " << refused);
  CHECK(grown == 1);
  int volumes_grown = 0;
  for (const std::string& name : names) volumes_grown += VolumeCapacity(api, api.Claim("default", name)) == "6Mi";
  CHECK(volumes_grown == 1);
  CHECK(api.Denials().empty());
}
