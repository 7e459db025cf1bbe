// LeaderElector against the fake API server: Leading() holds only inside the renew deadline,
// so that a leader whose renewals stopped succeeding acts on nothing, even before its renewer
// gives up (on_lost).
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <mutex>
#include <thread>

#include "kube/leader.hpp"
#include "test/fake/fake_test_client.hpp"

namespace {

// As the provisioner does (main.cpp): a write to a connection the server closed fails, not kills.
const bool kNoSigpipe = [] { return signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();

using fake_test::Admin;
using fake_test::EndpointOf;
using fake_test::Server;

const char* const kLeases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";

LeaseTimings Short() {
  LeaseTimings t;
  t.lease_duration = std::chrono::seconds(3);
  t.renew_deadline = std::chrono::seconds(2);
  t.retry_period = std::chrono::seconds(1);
  return t;
}

// Another process takes the lease over (as after this one was paused past the lease): the
// renewals of `holder` fail from then on ("held by other").
void Steal(const fake::ApiServer& api, const std::string& name) {
  fake_test::Reply got = Admin(api, "GET", std::string(kLeases) + "/" + name);
  REQUIRE(got.code == 200);
  picojson::object lease = got.body.get<picojson::object>();
  picojson::object spec = lease["spec"].get<picojson::object>();
  spec["holderIdentity"] = picojson::value("other");
  spec["renewTime"] = picojson::value(logging::UtcNow(6));
  lease["spec"] = picojson::value(spec);
  REQUIRE(Admin(api, "PUT", std::string(kLeases) + "/" + name, picojson::value(lease).serialize()).code == 200);
}

}  // namespace

TEST_CASE("a leader whose renewals fail stops leading at its renew deadline, before it gives up the lease") {
  Server s;
  LeaderElector elector(EndpointOf(s.api), "default", "lease-a", "me", Short());
  REQUIRE(elector.Init().ok());
  CHECK_FALSE(elector.Leading());
  REQUIRE(elector.Acquire([] { return false; }));
  CHECK(elector.Leading());

  std::atomic<bool> lost{false}, leading_when_lost{true};
  elector.StartRenewing([&] {
    leading_when_lost = elector.Leading();
    lost = true;
  });
  Steal(s.api, "lease-a");
  // The renewer calls on_lost once no renewal succeeded for the renew deadline, at its next
  // try: by then the last write is older than the renew deadline, so Leading() must be false
  // (this holds whatever the machine's load: the write came before the last success).
  for (int i = 0; i < 200 && !lost; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(lost);
  CHECK_FALSE(leading_when_lost);
  CHECK_FALSE(elector.Leading());
  elector.StopRenewing();
}

TEST_CASE("a leader that renews keeps leading past its renew deadline, and releases the lease") {
  Server s;
  LeaseTimings t;
  t.lease_duration = std::chrono::seconds(9);
  t.renew_deadline = std::chrono::seconds(6);
  t.retry_period = std::chrono::seconds(1);
  LeaderElector elector(EndpointOf(s.api), "default", "lease-b", "me", t);
  REQUIRE(elector.Init().ok());
  REQUIRE(elector.Acquire([] { return false; }));
  auto acquired = std::chrono::steady_clock::now();
  std::atomic<bool> lost{false};
  elector.StartRenewing([&] { lost = true; });
  // Past the first renew deadline: the renewals (every second) moved it on.
  std::this_thread::sleep_until(acquired + std::chrono::milliseconds(6500));
  CHECK(elector.Leading());
  CHECK_FALSE(lost);
  elector.Release();
  CHECK_FALSE(elector.Leading());
  fake_test::Reply got = Admin(s.api, "GET", std::string(kLeases) + "/lease-b");
  REQUIRE(got.code == 200);
  CHECK(got.body.get("spec").get("holderIdentity").to_str() == "");
}

TEST_CASE("a leader that never renews stops leading at its renew deadline") {
  Server s;
  LeaderElector elector(EndpointOf(s.api), "default", "lease-c", "me", Short());
  REQUIRE(elector.Init().ok());
  REQUIRE(elector.Acquire([] { return false; }));
  auto acquired = std::chrono::steady_clock::now();  // after its write
  CHECK(elector.Leading());
  // As a process paused (SIGSTOP, a frozen VM) after its last renewal sees it on resuming.
  std::this_thread::sleep_until(acquired + std::chrono::milliseconds(2200));
  CHECK_FALSE(elector.Leading());
}

// An uninstall deletes the Lease, then the Role: a renewal in between must not make the Lease
// again (the pod could not release it any more, and the next install's create of the Lease
// would fail with AlreadyExists). The holder has lost it: it stops leading at once.
TEST_CASE("a leader whose lease is deleted stops leading at once and leaves no lease behind") {
  Server s;
  LeaderElector elector(EndpointOf(s.api), "default", "lease-d", "me", Short());
  REQUIRE(elector.Init().ok());
  REQUIRE(elector.Acquire([] { return false; }));  // a candidate creates the missing lease
  REQUIRE(Admin(s.api, "GET", std::string(kLeases) + "/lease-d").code == 200);
  std::atomic<bool> lost{false}, leading_when_lost{true};
  elector.StartRenewing([&] {
    leading_when_lost = elector.Leading();
    lost = true;
  });
  REQUIRE(Admin(s.api, "DELETE", std::string(kLeases) + "/lease-d").code == 200);
  // Renewals come every second: within this wait, several of them find the lease gone.
  for (int i = 0; i < 200 && !lost; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(lost);
  CHECK_FALSE(leading_when_lost);
  CHECK_FALSE(elector.Leading());
  elector.Release();  // as at a stop: nothing to release, nothing made
  CHECK(Admin(s.api, "GET", std::string(kLeases) + "/lease-d").code == 404);
}

// Issue 54: the dispatcher says on its Lease which claims the instances watch. What the holder
// sets is written with its next renewal, read by a candidate at its next look, and kept by a
// release.
TEST_CASE("the holder's annotation reaches a candidate's observer at its next look, and outlives the release") {
  Server s;
  LeaderElector holder(EndpointOf(s.api), "default", "lease-n", "me", Short());
  REQUIRE(holder.Init().ok());
  REQUIRE(holder.Acquire([] { return false; }));
  holder.StartRenewing([] {});
  holder.SetAnnotation("example.com/word", "all");
  LeaderElector candidate(EndpointOf(s.api), "default", "lease-n", "you", Short());
  REQUIRE(candidate.Init().ok());
  std::mutex mu;
  std::string seen;
  candidate.Observe([&](const Lease& l) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = l.meta.annotations.find("example.com/word");
    seen = it == l.meta.annotations.end() ? "" : it->second;
  });
  std::atomic<bool> stop{false};
  std::thread looking([&] { candidate.Acquire([&] { return stop.load(); }); });
  auto heard = [&](const std::string& want) {
    for (int i = 0; i < 200; ++i) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (seen == want) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  };
  CHECK(heard("all"));
  holder.SetAnnotation("example.com/word", "own-node");
  CHECK(heard("own-node"));
  holder.Release();
  fake_test::Reply got = Admin(s.api, "GET", std::string(kLeases) + "/lease-n");
  REQUIRE(got.code == 200);
  CHECK(got.body.get("metadata").get("annotations").get("example.com/word").to_str() == "own-node");
  stop = true;
  candidate.CancelAcquire();
  looking.join();
}
