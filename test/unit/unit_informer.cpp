// Informer against the fake API server: a dropped watch resumes from the resourceVersion of
// the last event it applied, not from the list's (which would replay events, and after a
// compaction force a 410 and a full relist). Two label selections into one cache: an object
// moving between them is held once, and a removal from one while the other holds it hands the
// handler the object, not "gone", whichever half of the move comes first.
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
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

TEST_CASE("an informer of two label selections holds each object once, as its labels move it between them") {
  Server s;
  REQUIRE(Admin(s.api, "POST", fake_test::kPvs, fake_test::Pv("moving")).code == 201);
  REQUIRE(Admin(s.api, "POST", fake_test::kPvs, fake_test::Pv("other")).code == 201);
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> calls;  // (key, label now; "-" when gone)
  Informer<Volume> pvs("PersistentVolumes", api::kVolumes, nullptr, fake_test::EndpointOf(s.api),
                       [&](const std::string& key, const Volume* now) {
                         std::lock_guard<std::mutex> l(mu);
                         std::string label = "-";
                         if (now != nullptr) label = now->meta.labels.count("node") ? now->meta.labels.at("node") : "";
                         calls.emplace_back(key, label);
                       });
  pvs.SetSelections({"node in (a,shared)", "!node"});
  REQUIRE(pvs.Start().ok());
  REQUIRE(Eventually([&] { return pvs.Synced(); }));
  CHECK(pvs.Size() == 2);
  auto label_of = [&](const std::string& name) -> std::string {
    std::optional<Volume> v = pvs.Get(name);
    if (!v) return "-";
    return v->meta.labels.count("node") ? v->meta.labels.at("node") : "";
  };
  auto relabel = [&](const std::string& value) {
    return Admin(s.api, "PATCH", std::string(fake_test::kPvs) + "/moving",
                 R"({"metadata":{"labels":{"node":)" + (value.empty() ? std::string("null") : "\"" + value + "\"") + "}}}",
                 "application/merge-patch+json")
        .code;
  };
  // Unlabelled -> a: from the second selection to the first; held once.
  REQUIRE(relabel("a") == 200);
  REQUIRE(Eventually([&] { return label_of("moving") == "a"; }));
  CHECK(Eventually([&] { return pvs.Size() == 2; }));
  int each = 0;
  pvs.ForEach([&](const Volume&) { ++each; });
  CHECK(each == 2);
  // a -> b: in neither any more; the handler's last word on it is that it is gone.
  REQUIRE(relabel("b") == 200);
  REQUIRE(Eventually([&] { return label_of("moving") == "-"; }));
  CHECK(pvs.Size() == 1);
  CHECK(Eventually([&] {
    std::lock_guard<std::mutex> l(mu);
    return !calls.empty() && calls.back() == std::make_pair(std::string("moving"), std::string("-"));
  }));
  // b -> shared, then no label: back in the first selection, then the second; "other" untouched.
  REQUIRE(relabel("shared") == 200);
  REQUIRE(Eventually([&] { return label_of("moving") == "shared"; }));
  REQUIRE(relabel("") == 200);
  REQUIRE(Eventually([&] { return label_of("moving") == ""; }));
  CHECK(Eventually([&] { return pvs.Size() == 2; }));
  CHECK(label_of("other") == "");
  pvs.Stop();
}

// Issue 53, 5: a move whose addition to one selection comes before its removal from the other
// is no removal: the handler is told the object as the other selection holds it (the
// controller would otherwise forget the volume, and its size). The "no label" selection's
// thread is held in the handler (on an event about another PV) until the addition is in.
TEST_CASE("an object that moved between two selections is handed to the handler, not reported gone, when its removal comes last") {
  Server s;
  for (const char* name : {"moving", "gate"}) REQUIRE(Admin(s.api, "POST", fake_test::kPvs, fake_test::Pv(name)).code == 201);
  std::mutex mu;
  std::condition_variable cv;
  bool hold = false, holding = false;
  std::vector<std::pair<std::string, std::string>> calls;  // (key, label now; "-" when gone)
  Informer<Volume> pvs("PersistentVolumes", api::kVolumes, nullptr, fake_test::EndpointOf(s.api),
                       [&](const std::string& key, const Volume* now) {
                         std::unique_lock<std::mutex> l(mu);
                         std::string label = "-";
                         if (now != nullptr) label = now->meta.labels.count("node") ? now->meta.labels.at("node") : "";
                         calls.emplace_back(key, label);
                         if (key == "gate" && hold) {
                           holding = true;
                           cv.notify_all();
                           cv.wait(l, [&] { return !hold; });
                         }
                       });
  pvs.SetSelections({"node in (a)", "!node"});
  REQUIRE(pvs.Start().ok());
  REQUIRE(Eventually([&] { return pvs.Synced(); }));
  // The fake's PV controller writes each new PV's phase once: wait for those writes first.
  auto phase = [&](const std::string& name) {
    std::optional<Volume> v = pvs.Get(name);
    return v ? v->phase : "";
  };
  REQUIRE(Eventually([&] { return phase("moving") == "Available" && phase("gate") == "Available"; }));
  auto patch = [&](const std::string& name, const std::string& metadata) {
    return Admin(s.api, "PATCH", std::string(fake_test::kPvs) + "/" + name, R"({"metadata":)" + metadata + "}",
                 "application/merge-patch+json")
        .code;
  };
  {
    std::lock_guard<std::mutex> l(mu);
    hold = true;
  }
  REQUIRE(patch("gate", R"({"annotations":{"touched":"yes"}})") == 200);
  REQUIRE(Eventually([&] {
    std::lock_guard<std::mutex> l(mu);
    return holding;
  }));
  // "moving" gets the label: added to the first selection (its thread runs), and its removal
  // from the second waits behind the held event.
  REQUIRE(patch("moving", R"({"labels":{"node":"a"}})") == 200);
  size_t added = 0;
  REQUIRE(Eventually([&] {
    std::lock_guard<std::mutex> l(mu);
    for (size_t i = 0; i < calls.size(); ++i)
      if (calls[i] == std::make_pair(std::string("moving"), std::string("a"))) added = i + 1;
    return added > 0;
  }));
  {
    std::lock_guard<std::mutex> l(mu);
    hold = false;
  }
  cv.notify_all();
  // The removal from the second selection: the handler is told the object, labelled "a".
  std::vector<std::string> after;
  REQUIRE(Eventually([&] {
    std::lock_guard<std::mutex> l(mu);
    after.clear();
    for (size_t i = added; i < calls.size(); ++i)
      if (calls[i].first == "moving") after.push_back(calls[i].second);
    return !after.empty();
  }));
  CHECK(after == std::vector<std::string>{"a"});
  CHECK(Eventually([&] { return pvs.Size() == 2; }));
  CHECK(pvs.Get("moving").has_value());
  pvs.Stop();
}

// Issue 54: the claim watch switches between every claim and a node's while running. The new
// selections are listed before the old ones end: an object in both is never reported gone; one
// only the old selection held is.
TEST_CASE("Reselect while running: an object in the old and the new selections stays; one only the old held is gone") {
  Server s;
  for (const char* name : {"mine", "theirs"}) REQUIRE(Admin(s.api, "POST", fake_test::kPvs, fake_test::Pv(name)).code == 201);
  REQUIRE(Admin(s.api, "PATCH", std::string(fake_test::kPvs) + "/mine", R"({"metadata":{"labels":{"node":"a"}}})",
                "application/merge-patch+json")
              .code == 200);
  std::mutex mu;
  std::vector<std::pair<std::string, bool>> calls;  // (key, present)
  Informer<Volume> pvs("PersistentVolumes", api::kVolumes, nullptr, fake_test::EndpointOf(s.api),
                       [&](const std::string& key, const Volume* now) {
                         std::lock_guard<std::mutex> l(mu);
                         calls.emplace_back(key, now != nullptr);
                       });
  REQUIRE(pvs.Start().ok());  // the whole collection
  REQUIRE(Eventually([&] { return pvs.Synced() && pvs.Size() == 2; }));
  auto gone = [&](const std::string& key) {
    std::lock_guard<std::mutex> l(mu);
    int n = 0;
    for (const auto& [k, present] : calls) n += k == key && !present;
    return n;
  };
  REQUIRE(pvs.Reselect({"node in (a)"}).ok());
  CHECK(pvs.Synced());
  CHECK(pvs.Size() == 1);
  CHECK(pvs.Get("mine").has_value());
  CHECK_FALSE(pvs.Get("theirs").has_value());
  CHECK(gone("theirs") == 1);
  CHECK(gone("mine") == 0);
  // The new selection watches: a PV labelled for a after the switch comes in.
  REQUIRE(Admin(s.api, "POST", fake_test::kPvs, fake_test::Pv("later")).code == 201);
  REQUIRE(Admin(s.api, "PATCH", std::string(fake_test::kPvs) + "/later", R"({"metadata":{"labels":{"node":"a"}}})",
                "application/merge-patch+json")
              .code == 200);
  CHECK(Eventually([&] { return pvs.Get("later").has_value(); }));
  // And back to the whole collection: nothing it held is reported gone.
  REQUIRE(pvs.Reselect({""}).ok());
  CHECK(pvs.Size() == 3);
  CHECK(gone("mine") == 0);
  CHECK(gone("later") == 0);
  pvs.Stop();
}
