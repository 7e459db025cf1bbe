// The work queue: deduplication, delays, backoff growth and cap, shutdown.
#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "base/queue.hpp"

using std::chrono::milliseconds;

TEST_CASE("a key waits at most once", "[queue]") {
  WorkQueue q;
  q.Add("a");
  q.Add("b");
  q.Add("a");
  CHECK(q.Depth() == 2);
  std::string k;
  REQUIRE(q.Get(&k));
  CHECK(k == "a");
  REQUIRE(q.Get(&k));
  CHECK(k == "b");
  CHECK(q.Depth() == 0);
}

TEST_CASE("a delayed key comes when due, and Add makes it due now", "[queue]") {
  WorkQueue q;
  // Read before AddAfter, so that "at least 50 ms" holds for any queue that waits out the
  // delay, however the threads are scheduled. Read after it, the bound could miss by the
  // microseconds between the two (a case of this file failed once in CI's sanitize run).
  auto start = std::chrono::steady_clock::now();
  q.AddAfter("late", milliseconds(50));
  q.AddAfter("later", milliseconds(100000));
  std::string k;
  REQUIRE(q.Get(&k));
  CHECK(k == "late");
  CHECK(std::chrono::steady_clock::now() - start >= milliseconds(50));
  q.Add("later");
  REQUIRE(q.Get(&k));
  CHECK(k == "later");
  CHECK(q.Depth() == 0);
}

TEST_CASE("backoff doubles per failure, is capped, and Forget resets it", "[queue]") {
  WorkQueue q(milliseconds(100), milliseconds(1000));
  std::vector<long> delays;
  for (int i = 0; i < 6; ++i) delays.push_back(q.AddRateLimited("k").count());
  // 100, 200, 400, 800, 1000, 1000 with +-20% jitter
  long want[] = {100, 200, 400, 800, 1000, 1000};
  for (int i = 0; i < 6; ++i) {
    INFO(i);
    CHECK(delays[i] >= want[i] * 8 / 10);
    CHECK(delays[i] <= want[i] * 12 / 10);
  }
  CHECK(q.Failures("k") == 6);
  CHECK(q.AddRateLimited("k", milliseconds(5000)).count() == 5000);  // Retry-After wins
  q.Forget("k");
  CHECK(q.Failures("k") == 0);
  CHECK(q.AddRateLimited("k").count() <= 120);
}

TEST_CASE("ShutDown wakes a waiting Get", "[queue]") {
  WorkQueue q;
  std::thread t([&] {
    std::this_thread::sleep_for(milliseconds(20));
    q.ShutDown();
  });
  std::string k;
  CHECK_FALSE(q.Get(&k));
  t.join();
}

TEST_CASE("Add of a key that a waiting Get is timing out on (regression: use-after-free)", "[queue]") {
  // Get waits until the delayed key is due; Add makes it due now and erases the delayed entry
  // that Get's wait was timed by. Under AddressSanitizer (make sanitize) this used to crash.
  WorkQueue q;
  q.AddAfter("k", milliseconds(500));
  std::string k;
  std::thread t([&] {
    std::this_thread::sleep_for(milliseconds(50));
    q.Add("k");
  });
  REQUIRE(q.Get(&k));
  CHECK(k == "k");
  t.join();
  CHECK(q.Depth() == 0);
}

TEST_CASE("a server's Retry-After holds the key even when it is added again", "[queue]") {
  WorkQueue q(milliseconds(10), milliseconds(100));
  auto start = std::chrono::steady_clock::now();  // before the Retry-After is given: see above
  q.AddRateLimited("k", milliseconds(300));
  q.Add("k");  // e.g. a watch event for the same object
  q.Add("other");
  std::string k;
  REQUIRE(q.Get(&k));
  CHECK(k == "other");
  REQUIRE(q.Get(&k));
  CHECK(k == "k");
  CHECK(std::chrono::steady_clock::now() - start >= milliseconds(300));  // an ordering bound, not a speed check
  q.Forget("k");
  q.Add("k");
  CHECK(q.Depth() == 1);
}

TEST_CASE("a key added while being worked on still waits out the server's Retry-After", "[queue]") {
  WorkQueue q;
  q.Add("k");
  std::string k;
  REQUIRE(q.Get(&k));
  q.Add("k");                                // a watch event while the worker handles "k"
  q.AddRateLimited("k", milliseconds(300));  // the handler got 429 with Retry-After
  q.Add("other");
  REQUIRE(q.Get(&k));
  CHECK(k == "other");
  CHECK(q.Depth() == 1);  // "k" waits for its delay
}

TEST_CASE("a key added while a worker has it comes again only after Done", "[queue]") {
  WorkQueue q;
  q.Add("k");
  std::string k;
  REQUIRE(q.Get(&k));
  q.Add("k");  // a watch event while a worker handles "k"
  q.Add("other");
  std::string second;
  REQUIRE(q.Get(&second));
  CHECK(second == "other");  // not "k": its worker is not done
  CHECK(q.Depth() == 1);
  q.Done("other");
  q.Done("k");
  REQUIRE(q.Get(&k));
  CHECK(k == "k");
  q.Done("k");
  CHECK(q.Depth() == 0);
}

TEST_CASE("workers never hold the same key at once, and every add is worked on", "[queue]") {
  WorkQueue q;
  constexpr int kKeys = 20, kAdds = 20000, kWorkers = 4;
  std::mutex mu;
  std::set<std::string> held;
  std::map<std::string, int> last_seen_add, last_added;
  bool overlap = false;
  std::atomic<int> handled{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w)
    workers.emplace_back([&] {
      std::string k;
      while (q.Get(&k)) {
        {
          std::lock_guard<std::mutex> l(mu);
          overlap = overlap || !held.insert(k).second;
          last_seen_add[k] = last_added[k];  // everything added so far is seen by this turn
        }
        std::this_thread::yield();
        {
          std::lock_guard<std::mutex> l(mu);
          held.erase(k);
        }
        ++handled;
        q.Done(k);
      }
    });
  for (int i = 0; i < kAdds; ++i) {
    std::string k = "k" + std::to_string(i % kKeys);
    {
      std::lock_guard<std::mutex> l(mu);
      last_added[k] = i;
    }
    q.Add(k);
  }
  // Every key's last add must be seen by some later turn.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool all_seen = false;
  while (!all_seen && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
    std::lock_guard<std::mutex> l(mu);
    all_seen = last_seen_add == last_added && held.empty();
  }
  q.ShutDown();
  for (auto& t : workers) t.join();
  CHECK_FALSE(overlap);
  CHECK(all_seen);
  CHECK(handled > 0);
}

TEST_CASE("Get takes the keys due now, in order, each one handed out once", "[queue]") {
  WorkQueue q;
  for (const char* k : {"a", "b", "c"}) q.Add(k);
  q.AddAfter("later", milliseconds(100000));
  std::string k1, k2, k3;
  REQUIRE(q.Get(&k1));
  REQUIRE(q.Get(&k2));
  CHECK(k1 == "a");
  CHECK(k2 == "b");
  // a key added again while held waits for its Done
  q.Add("b");
  REQUIRE(q.Get(&k3));
  CHECK(k3 == "c");  // not "later": it is not due; not "b": it is held
  for (const char* k : {"a", "b", "c"}) q.Done(k);
  REQUIRE(q.Get(&k1));
  CHECK(k1 == "b");
  q.ShutDown();
  CHECK_FALSE(q.Get(&k1));
}

TEST_CASE("RelistBackoff: client-go's reflector backoff, 0.8 s doubling to 30 s, stretched 0-100 %, reset after 2 min", "[queue]") {
  using std::chrono::seconds;
  const auto t0 = std::chrono::steady_clock::now();
  std::mt19937 rng(7);
  RelistBackoff b(t0);
  // 410s in a row (each a second after the last): the base doubles up to the cap.
  const long bases[] = {800, 1600, 3200, 6400, 12800, 25600, 30000, 30000};
  auto t = t0;
  for (long base : bases) {
    t += seconds(1);
    const long ms = b.Next(t, rng).count();
    INFO("base " << base << ", got " << ms);
    CHECK(ms >= base);
    CHECK(ms < 2 * base);
  }
  // Under 2 minutes since the last: still capped. Over 2 minutes: back to the start.
  t += seconds(119);
  CHECK(b.Next(t, rng).count() >= 30000);
  t += seconds(121);
  const long reset = b.Next(t, rng).count();
  CHECK(reset >= 800);
  CHECK(reset < 1600);
}
