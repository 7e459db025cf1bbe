// Which deleted nodes are due for the cleanup of their volumes (gone_nodes.hpp).
#include <catch2/catch.hpp>

#include "decide/gone_nodes.hpp"

using std::chrono::seconds;

TEST_CASE("a node named by volumes and missing for the delay is due; one that comes back is forgotten", "[gone]") {
  GoneNodes gone(seconds(60));
  const auto t0 = GoneNodes::Clock::now();
  const std::set<std::string> named = {"a", "b"};
  CHECK(gone.Due(t0, named, {"a", "b"}).empty());
  CHECK(gone.NextDue() == GoneNodes::Clock::time_point::max());
  CHECK(gone.Due(t0 + seconds(10), named, {"a"}).empty());  // b missing from t0+10
  CHECK(gone.NextDue() == t0 + seconds(70));
  CHECK(gone.Due(t0 + seconds(69), named, {"a"}).empty());
  CHECK(gone.Due(t0 + seconds(70), named, {"a"}) == std::vector<std::string>{"b"});
  // b comes back before a second look: forgotten, and its clock starts again when it goes.
  CHECK(gone.Due(t0 + seconds(71), named, {"a", "b"}).empty());
  CHECK(gone.Due(t0 + seconds(80), named, {"a"}).empty());
  CHECK(gone.Due(t0 + seconds(139), named, {"a"}).empty());
  CHECK(gone.Due(t0 + seconds(140), named, {"a"}) == std::vector<std::string>{"b"});
  // Once no volume names it (cleaned up), it is forgotten.
  CHECK(gone.Due(t0 + seconds(141), {"a"}, {"a"}).empty());
  CHECK(gone.NextDue() == GoneNodes::Clock::time_point::max());
  // A node that no volume names is never due, missing or not.
  CHECK(gone.Due(t0 + seconds(500), {"a"}, {}).empty());
  CHECK(gone.Due(t0 + seconds(560), {"a"}, {}) == std::vector<std::string>{"a"});
  CHECK(gone.Due(t0 + seconds(1000), {}, {}).empty());
}
