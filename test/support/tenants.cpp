// Tenants of one provisioner instance: the bodies (tenants.hpp has the contracts).
#include "test/support/tenants.hpp"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdlib>

namespace harness {

int AsTenant(const std::string& command) {
  const std::string quoted = "'" + command + "'";
  return std::system(("setpriv --reuid=1000 --regid=1000 --clear-groups sh -c " + quoted + " >/dev/null 2>&1").c_str()) == 0
             ? 0
             : 1;
}

std::string TenantClaim(const std::string& ns, const std::string& name, const std::string& cls,
                        const std::map<std::string, std::string>& labels,
                        const std::map<std::string, std::string>& annotations, const std::string& clone_of,
                        const std::string& size) {
  std::string yaml = ClaimYaml(ns, name, cls, size, clone_of);
  std::string lines;
  if (!labels.empty()) lines += "\n  labels:";
  for (const auto& [k, v] : labels) lines += "\n    " + k + ": \"" + v + "\"";
  if (!annotations.empty()) lines += "\n  annotations:";
  for (const auto& [k, v] : annotations) lines += "\n    " + k + ": \"" + v + "\"";
  yaml.replace(yaml.find("\n  namespace:"), 0, lines);
  return yaml;
}

std::string Pattern(const std::string& pattern, const std::string& more) {
  return "  pathPattern: \"" + pattern + "\"\n" + more;
}

std::string HandVolume(const std::string& name, const std::string& path, const std::string& ns, const std::string& claim) {
  return R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":")" + name +
         R"("},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"persistentVolumeReclaimPolicy":"Retain",)"
         R"("storageClassName":"manual","hostPath":{"path":")" +
         path + R"("},"claimRef":{"namespace":")" + ns + R"(","name":")" + claim + R"(","uid":"1234"}}})";
}

Tenants::Tenants(const std::vector<std::string>& classes, std::map<std::string, std::string> env,
                 const std::function<void(Tenants&, std::map<std::string, std::string>&)>& before_start) {
  ::chmod(tmp.path().c_str(), 0755);  // uid 1000 reaches the volumes, as a pod through its mount
  ::mkdir(pv_dir.c_str(), 0755);
  for (const std::string& c : classes) api->CreateYaml(c);
  for (const char* ns : {"a", "b", "a-b", "fast"})
    api->CreateYaml(std::string("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ") + ns + "\n");
  if (before_start) before_start(*this, env);
  prov = std::make_unique<Provisioner>(*api, pv_dir, env);
}

std::string Tenants::Phase(const std::string& ns, const std::string& name) { return harness::Phase(api->Claim(ns, name)); }

bool Tenants::WaitBound(const std::string& ns, const std::string& name) {
  return Eventually([&] { return Phase(ns, name) == "Bound"; });
}

bool Tenants::WaitRefusedOrBound(const std::string& ns, const std::string& name) {
  Eventually([&] { return Phase(ns, name) == "Bound" || !Events(ns, name, "ProvisioningFailed").empty(); },
             std::chrono::seconds(60));
  return Phase(ns, name) != "Bound" && !Events(ns, name, "ProvisioningFailed").empty();
}

std::string Tenants::Events(const std::string& ns, const std::string& name, const std::string& reason, const std::string& part) {
  std::string all;
  for (const auto& e : api->EventsAbout(ns, name))
    if (e.get("reason").to_str() == reason && e.get("message").to_str().find(part) != std::string::npos)
      all += e.get("message").to_str() + "\n";
  return all;
}

bool Tenants::WaitEvent(const std::string& ns, const std::string& name, const std::string& reason, const std::string& part) {
  return Eventually([&] { return !Events(ns, name, reason, part).empty(); });
}

std::string Tenants::AllEvents(const std::string& ns, const std::string& name) {
  std::string all;
  for (const auto& e : api->EventsAbout(ns, name)) all += e.get("reason").to_str() + ": " + e.get("message").to_str() + "\n";
  return all;
}

void Tenants::DeleteClaim(const std::string& ns, const std::string& name) {
  picojson::value c = api->Claim(ns, name);
  const std::string pv = c.get("spec").get("volumeName").is<std::string>() ? c.get("spec").get("volumeName").to_str() : "";
  REQUIRE(api->Delete("/api/v1/namespaces/" + ns + "/persistentvolumeclaims/" + name).code == 200);
  if (!pv.empty()) REQUIRE(Eventually([&] { return !api->Volume(pv).is<picojson::object>(); }));
}

void Tenants::TenantData(const std::string& dir) {
  const std::string path = pv_dir + "/" + dir;
  REQUIRE(std::system(("mkdir -p " + path + " && chown 1000:1000 " + path + " && chmod 0700 " + path).c_str()) == 0);
  REQUIRE(AsTenant("echo secret > " + path + "/secret.txt") == 0);
}

}  // namespace harness
