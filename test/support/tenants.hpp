// Tenants of one provisioner instance: namespaces a, b, a-b and fast on one fake API server,
// claims with labels, annotations and data sources, and writes as uid 1000 (a pod's user).
// What the end-to-end tests of kept data's namespace rules share (e2e_kept_apart, and the
// attacks on it, e2e_attack_kept).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "test/support/harness.hpp"

namespace harness {

// Runs a shell command as uid/gid 1000 (a pod's user); 0 when it succeeded.
int AsTenant(const std::string& command);

// A claim in `ns` with labels and annotations; with `clone_of`, a clone of that claim; of `size`.
std::string TenantClaim(const std::string& ns, const std::string& name, const std::string& cls,
                        const std::map<std::string, std::string>& labels = {},
                        const std::map<std::string, std::string>& annotations = {}, const std::string& clone_of = "",
                        const std::string& size = "64Mi");

// Class parameters: `pattern` as pathPattern, then `more` (YAML lines).
std::string Pattern(const std::string& pattern, const std::string& more = "");

// A PersistentVolume an administrator wrote by hand (a static volume), bound to claim ns/claim.
std::string HandVolume(const std::string& name, const std::string& path, const std::string& ns, const std::string& claim);

// One instance on one root (PV_DIR, and more roots through `env`), the classes made first.
struct Tenants {
  TempDir tmp;
  std::string pv_dir = tmp.path() + "/pv";
  std::unique_ptr<FakeApi> api = std::make_unique<FakeApi>(tmp.path() + "/api");
  std::unique_ptr<Provisioner> prov;
  // `before_start` may prepare the disk and change `env` before the instance starts.
  explicit Tenants(const std::vector<std::string>& classes, std::map<std::string, std::string> env = {},
                   const std::function<void(Tenants&, std::map<std::string, std::string>&)>& before_start = {});

  std::string Phase(const std::string& ns, const std::string& name);
  bool WaitBound(const std::string& ns, const std::string& name);
  // Waits until the claim is Bound or refused (ProvisioningFailed); true when it was refused.
  bool WaitRefusedOrBound(const std::string& ns, const std::string& name);
  // The messages of the claim's events of `reason` that hold `part`, a line each.
  std::string Events(const std::string& ns, const std::string& name, const std::string& reason, const std::string& part = "");
  bool WaitEvent(const std::string& ns, const std::string& name, const std::string& reason, const std::string& part);
  // Every event of the claim, "reason: message" a line.
  std::string AllEvents(const std::string& ns, const std::string& name);
  // Deletes the claim and, if it had a volume, waits until that is gone too.
  void DeleteClaim(const std::string& ns, const std::string& name);
  // Data a tenant wrote in `dir` under PV_DIR (made mode 0700, uid 1000): dir/secret.txt.
  void TenantData(const std::string& dir);
};

}  // namespace harness
