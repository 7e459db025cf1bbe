// End to end: a network share mounted at the same path on every host (a class's pvDir with
// requireMount). The "share" is a tmpfs bind-mounted at the root and unmounted again, as a
// share goes up and down; its data lives on in the tmpfs meanwhile. Needs root to mount:
// skipped, with a message, otherwise.
#include <catch2/catch.hpp>

#include <sys/mount.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "test/support/harness.hpp"

using namespace harness;

namespace {

constexpr const char* kClaims = "/api/v1/namespaces/default/persistentvolumeclaims/";

int CountEvents(FakeApi& api, const std::string& ns, const std::string& name, const std::string& reason,
                const std::string& part) {
  int n = 0;
  for (const auto& e : api.EventsAbout(ns, name))
    if (e.get("reason").to_str() == reason && e.get("message").to_str().find(part) != std::string::npos) ++n;
  return n;
}

}  // namespace

TEST_CASE("requireMount: nothing is made or removed while the share is not mounted, and nothing is lost", "[e2e][mount]") {
  TempDir tmp;
  const std::string pv_dir = tmp.path() + "/pv", share = tmp.path() + "/share", backing = tmp.path() + "/backing";
  for (const std::string& d : {pv_dir, share, backing}) ::mkdir(d.c_str(), 0755);
  if (::mount("tmpfs", backing.c_str(), "tmpfs", 0, "size=4m") != 0) {
    WARN("SKIPPED: cannot mount a tmpfs here (needs root): " << std::strerror(errno));
    return;
  }
  struct Unmount {
    std::vector<std::string> dirs;
    ~Unmount() {
      for (const std::string& d : dirs) ::umount2(d.c_str(), MNT_DETACH);
    }
  } unmount{{share, backing}};
  auto mount_share = [&] { REQUIRE(::mount(backing.c_str(), share.c_str(), nullptr, MS_BIND, nullptr) == 0); };

  FakeApi api(tmp.path() + "/api");
  api.CreateYaml(ClassYaml("shared", "Delete", "hostpath-provisioner.io/hostpath",
                           "  pvDir: " + share + "\n  requireMount: \"true\"\n"));
  Provisioner p(api, pv_dir, {{"ALLOWED_PV_DIRS", share}});
  api.CreateYaml(ClaimYaml("default", "s1", "shared", "1Mi"));

  // Not mounted: a Warning, and nothing written to the directory beneath.
  REQUIRE(Eventually([&] { return CountEvents(api, "default", "s1", "ProvisioningFailed", "requireMount") > 0; }));
  CHECK(CountEvents(api, "default", "s1", "ProvisioningFailed", share + " is not a mount point") > 0);
  CHECK(ListDir(share).empty());
  CHECK(Phase(api.Claim("default", "s1")) == "Pending");

  // Mounted: provisioned on the share, retried without anyone's help.
  mount_share();
  REQUIRE(Eventually([&] { return Phase(api.Claim("default", "s1")) == "Bound"; }));
  const std::string pv = api.Claim("default", "s1").get("spec").get("volumeName").to_str();
  picojson::value volume = api.Volume(pv);
  const std::string name = "default-s1-" + pv;
  CHECK(volume.get("spec").get("hostPath").get("path").to_str() == share + "/" + name);
  CHECK(volume.get("spec").get("hostPath").get("type").to_str() == "Directory");
  CHECK(volume.get("metadata").get("annotations").get("hostpath-provisioner.io/require-mount").to_str() == "true");
  WriteFile(share + "/" + name + "/data.txt", "on the share\n");
  CHECK(Exists(backing + "/" + name + "/data.txt"));

  // The share goes away, then the claim: nothing is removed, the PV waits.
  REQUIRE(::umount2(share.c_str(), MNT_DETACH) == 0);
  REQUIRE(api.Delete(kClaims + std::string("s1")).code == 200);
  REQUIRE(Eventually([&] { return CountEvents(api, "default", pv, "VolumeFailedDelete", "requireMount") > 0; }));
  CHECK(api.Volume(pv).is<picojson::object>());
  CHECK(Exists(backing + "/" + name + "/data.txt"));

  // Back: the volume is removed from the share, and the share itself stays.
  mount_share();
  REQUIRE(Eventually([&] { return !api.Volume(pv).is<picojson::object>(); }));
  CHECK_FALSE(Exists(backing + "/" + name));
  CHECK(Exists(backing));
  CHECK(api.Denials().empty());
}
