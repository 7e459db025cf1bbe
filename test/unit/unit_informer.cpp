// Informer against the fake API server: a dropped watch resumes from the resourceVersion of
// the last event it applied, not from the list's (which would replay events, and after a
// compaction force a 410 and a full relist).
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <mutex>
#include <set>
#include <thread>

#include "kube/informer.hpp"
#include "test/fake/fake_test_client.hpp"

namespace {

// As the provisioner does (main.cpp): a write to a connection the server closed fails, not kills.
const bool kNoSigpipe = [] { return signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();

using fake_test::Admin;
using fake_test::Server;

// What the handler saw, for the test thread.
struct Seen {
  std::mutex mu;
  std::string last_rv;
  std::set<std::string> names;
  bool Has(const std::string& name) {
    std::lock_guard<std::mutex> l(mu);
    return names.count(name) > 0;
  }
  std::string LastRv() {
    std::lock_guard<std::mutex> l(mu);
    return last_rv;
  }
};

template <class Pred>
bool Eventually(Pred pred) {
  for (int i = 0; i < 400; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return pred();
}

std::vector<fake::RequestRecord> Of(const std::vector<fake::RequestRecord>& all, const std::string& verb) {
  std::vector<fake::RequestRecord> out;
  for (const auto& r : all)
    if (r.verb == verb && r.resource == "persistentvolumes") out.push_back(r);
  return out;
}

}  // namespace

TEST_CASE("a dropped watch resumes from the last event's resourceVersion, without a new list") {
  fake::ApiServerOptions opts;
  opts.bookmark_seconds = 3600;  // no bookmark moves the resume point: only events do
  Server s(opts);
  REQUIRE(Admin(s.api, "POST", fake_test::kPvs, fake_test::Pv("before")).code == 201);
  Seen seen;
  Informer<Volume> pvs("PersistentVolumes", api::kVolumes, nullptr, fake_test::EndpointOf(s.api),
                       [&](const std::string& key, const Volume* now) {
                         std::lock_guard<std::mutex> l(seen.mu);
                         seen.names.insert(key);
                         if (now != nullptr) seen.last_rv = now->meta.resource_version;
                       });
  REQUIRE(pvs.Start().ok());
  REQUIRE(Eventually([&] { return pvs.Synced(); }));
  const std::string list_rv = seen.LastRv();
  // Events after the list: the watch's resume point moves past the list's resourceVersion.
  for (const char* name : {"one", "two", "three"})
    REQUIRE(Admin(s.api, "POST", fake_test::kPvs, fake_test::Pv(name)).code == 201);
  REQUIRE(Eventually([&] { return seen.Has("three"); }));
  // The fake's PV controller writes each new PV once more (its phase): the resume point is the
  // last write's, once the informer has seen it.
  auto stored_rv = [&] {
    return picojson::value(Admin(s.api, "GET", fake_test::kPvs).body).get("metadata").get("resourceVersion").to_str();
  };
  REQUIRE(Eventually([&] { return seen.LastRv() == stored_rv(); }));
  const std::string last_rv = seen.LastRv();
  REQUIRE(last_rv != list_rv);

  s.api.ResetRequests();
  s.api.DropWatches();
  REQUIRE(Eventually([&] { return !Of(s.api.Requests(), "watch").empty(); }));
  std::vector<fake::RequestRecord> watches = Of(s.api.Requests(), "watch");
  CHECK(watches.front().resource_version == last_rv);
  CHECK(Of(s.api.Requests(), "list").empty());
  pvs.Stop();
}
