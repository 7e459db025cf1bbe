// The orphan scan alone (control/remove/orphan_scan.hpp), without the controller: the fake API
// server, the two caches the scan reads, and a root in a temporary directory. What it removes
// and what it keeps is seen on disk.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "control/remove/orphan_scan.hpp"
#include "decide/reconcile.hpp"
#include "test/fake/fake_test_client.hpp"

namespace {

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// Waits (up to a generous deadline) for `done`.
template <class Pred>
bool WaitFor(Pred done) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// A claim the server makes: its uid.
std::string MakeClaim(const fake::ApiServer& api, std::string body) {
  fake_test::Reply r = fake_test::Admin(api, "POST", fake_test::kPvcs, body);
  REQUIRE(r.code == 201);
  return fake::Str(r.body, {"metadata", "uid"});
}

}  // namespace

TEST_CASE("the orphan scan removes only empty directories of ours that no PV or claim names", "[orphan_scan]") {
  fake_test::Server s;
  std::shared_ptr<ApiEndpoint> ep = fake_test::EndpointOf(s.api);
  const std::string waiting_uid = MakeClaim(s.api, fake_test::Pvc("waiting"));
  std::string bound = fake_test::Pvc("bound");
  bound.insert(bound.size() - 2, R"(,"volumeName":"pvc-elsewhere")");
  const std::string bound_uid = MakeClaim(s.api, bound);
  const std::string made_uid = "aaaaaaaa-0000-0000-0000-000000000003";
  REQUIRE(fake_test::Admin(s.api, "POST", fake_test::kPvs, fake_test::Pv("pvc-" + made_uid)).code == 201);

  Informer<Claim> claims("PersistentVolumeClaims", api::kClaims, &SlimForCache, ep, [](const std::string&, const Claim*) {});
  Informer<Volume> volumes("PersistentVolumes", api::kVolumes, &SlimForCache, ep, [](const std::string&, const Volume*) {});
  REQUIRE(claims.Start().ok());
  REQUIRE(volumes.Start().ok());
  REQUIRE(WaitFor([&] { return claims.Synced() && volumes.Synced(); }));

  const std::string top = fake_test::TempDir(), dir = top + "/root";
  REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
  auto mkdir = [&](const std::string& name) { REQUIRE(::mkdir((dir + "/" + name).c_str(), 0755) == 0); };
  const std::string gone = "default-gone-pvc-aaaaaaaa-0000-0000-0000-000000000001";
  const std::string data = "default-data-pvc-aaaaaaaa-0000-0000-0000-000000000002";
  const std::string made = "default-made-pvc-" + made_uid;               // its PV exists
  const std::string waiting = "default-waiting-pvc-" + waiting_uid;      // its claim waits (the cache says)
  const std::string bound_dir = "default-bound-pvc-" + bound_uid;        // its claim exists (the fresh list says)
  const std::string creating = "default-new-pvc-aaaaaaaa-0000-0000-0000-000000000006";  // its PV is being made
  const std::string copy_cut = ".clone-pvc-aaaaaaaa-0000-0000-0000-000000000008";       // a copy cut short
  const std::string copying = ".clone-pvc-aaaaaaaa-0000-0000-0000-000000000009";        // a copy running
  for (const std::string& d : {gone, data, made, waiting, bound_dir, creating, copy_cut, copying, std::string("not-ours")})
    mkdir(d);
  std::ofstream(dir + "/" + data + "/file") << "someone's data";

  Result<Root> opened = Root::Open(dir);
  REQUIRE(opened.ok());
  Roots roots(std::move(*opened), {});
  NameSet created;
  created.Insert("pvc-aaaaaaaa-0000-0000-0000-000000000006");
  bool may_act = false;
  OrphanScan scan(&claims, &volumes, &created, &roots, [&] { return may_act; },
                  [](const std::string& pv) { return pv == "pvc-aaaaaaaa-0000-0000-0000-000000000009"; });
  WorkerApi w(ep);
  REQUIRE(w.conn.Init().ok());

  // Not acting (the lease lost): nothing goes.
  CHECK(scan.Run(w));
  CHECK(Exists(dir + "/" + gone));
  CHECK(Exists(dir + "/" + copy_cut));

  may_act = true;
  CHECK(scan.Run(w));
  CHECK_FALSE(Exists(dir + "/" + gone));      // empty, no PV, no claim
  CHECK_FALSE(Exists(dir + "/" + copy_cut));  // a half-made clone whose claim is gone
  CHECK(Exists(dir + "/" + data + "/file"));  // may be someone's data: only reported
  CHECK(Exists(dir + "/" + made));
  CHECK(Exists(dir + "/" + waiting));
  CHECK(Exists(dir + "/" + bound_dir));
  CHECK(Exists(dir + "/" + creating));
  CHECK(Exists(dir + "/" + copying));
  CHECK(Exists(dir + "/not-ours"));

  claims.Stop();
  volumes.Stop();
  (void)std::system(("rm -rf '" + top + "'").c_str());
}
