// The free-space check's arithmetic and bookkeeping (space.hpp).
#include <catch2/catch.hpp>

#include "base/text.hpp"
#include "fs/space.hpp"

TEST_CASE("SpaceShortfall: fits, or names the sizes", "[space]") {
  const int64_t mib = 1 << 20;
  CHECK(SpaceShortfall(5 * mib, 10 * mib, 0, 0, false).empty());
  CHECK(SpaceShortfall(10 * mib, 10 * mib, 0, 0, false).empty());
  CHECK(SpaceShortfall(5 * mib, 10 * mib, 8 * mib, 3, true).empty());  // overcommit: promises do not count
  std::string strict = SpaceShortfall(5 * mib, 10 * mib, 8 * mib, 3, false);
  CHECK(strict == "not enough space: 5.0 MiB requested, 2.0 MiB available (10.0 MiB free on the filesystem, less 8.0 MiB "
                  "promised to 3 other volumes)");
  CHECK_THAT(SpaceShortfall(5 * mib, 10 * mib, 20 * mib, 1, false), Catch::Contains("0 B available") && Catch::Contains("1 other volume)"));
  CHECK(SpaceShortfall(11 * mib, 10 * mib, 0, 0, true) == "not enough space: 11.0 MiB requested, 10.0 MiB available");
  CHECK(HumanBytes(0) == "0 B");
  CHECK(HumanBytes(1536) == "1.5 KiB");
  CHECK(HumanBytes(uint64_t{1} << 40) == "1.0 TiB");
}

TEST_CASE("SpaceAdvice: only what every cluster lets a user do; never lowering a request in place", "[space]") {
  const std::string room = "free space on that filesystem or delete volumes no longer needed (retried at once when one "
                           "goes), or give the root a larger filesystem";
  const std::string recreate_class = "; or create StorageClass strict anew with parameter overcommit: \"true\" "
                                     "(parameters cannot be edited; deleting a class leaves its claims and volumes alone)";
  // A new volume: its claim can be made again, smaller (a pending claim's spec cannot change).
  CHECK(SpaceAdvice(false, true, "strict") == room + "; or delete the claim and create it again with a smaller request");
  CHECK(SpaceAdvice(false, false, "strict") ==
        room + "; or delete the claim and create it again with a smaller request" + recreate_class);
  // A growth: the request is not to be lowered (refused by the API server unless
  // RecoverVolumeExpansionFailure is on).
  CHECK(SpaceAdvice(true, true, "strict") == room);
  CHECK(SpaceAdvice(true, false, "strict") == room + recreate_class);
  for (bool growth : {false, true})
    for (bool overcommit : {false, true}) CHECK_THAT(SpaceAdvice(growth, overcommit, "c"), !Catch::Contains("less") && !Catch::Contains("lower"));
}

TEST_CASE("Promises: a reservation checks and holds the room in one step until the watch event or a release", "[space]") {
  const int64_t mib = 1 << 20;
  Promises p;
  // Four 6 MiB volumes on 10 MiB, strict: the first is reserved, the others find 4 MiB.
  CHECK(p.Reserve("v1", "/a", 6 * mib, 6 * mib, 10 * mib, false).empty());
  for (const char* v : {"v2", "v3", "v4"})
    CHECK(p.Reserve(v, "/a", 6 * mib, 6 * mib, 10 * mib, false) ==
          "not enough space: 6.0 MiB requested, 4.0 MiB available (10.0 MiB free on the filesystem, less 6.0 MiB "
          "promised to 1 other volume)");
  CHECK(p.Under("/a", "") == std::make_pair(uint64_t{6 * mib}, size_t{1}));
  // Its PV's watch event takes over; a later release changes nothing.
  p.Set("v1", "/a", 6 * mib);
  p.Release("v1");
  CHECK(p.Under("/a", "") == std::make_pair(uint64_t{6 * mib}, size_t{1}));
  // A failed provision releases its reservation: the room is free again.
  CHECK(p.Reserve("v2", "/b", 3 * mib, 3 * mib, 10 * mib, false).empty());
  p.Release("v2");
  CHECK(p.Under("/b", "") == std::make_pair(uint64_t{0}, size_t{0}));
  // An expansion reserves the new size; an event still bringing the old size keeps it; a
  // failed one goes back to what the watch last said.
  CHECK(p.Reserve("v1", "/a", 8 * mib, 8 * mib, 10 * mib, false).empty());
  CHECK(p.Under("/a", "") == std::make_pair(uint64_t{8 * mib}, size_t{1}));
  p.Set("v1", "/a", 6 * mib);
  CHECK(p.Under("/a", "") == std::make_pair(uint64_t{8 * mib}, size_t{1}));
  p.Release("v1");
  CHECK(p.Under("/a", "") == std::make_pair(uint64_t{6 * mib}, size_t{1}));
  // Overcommit: promises do not count, but the reservation is still recorded for strict classes.
  CHECK(p.Reserve("v5", "/a", 9 * mib, 9 * mib, 10 * mib, true).empty());
  CHECK(p.Under("/a", "") == std::make_pair(uint64_t{15 * mib}, size_t{2}));
}

TEST_CASE("Promises: per root, updated in place, leaving a volume out", "[space]") {
  Promises p;
  p.Set("v1", "/a", 100);
  p.Set("v2", "/a", 50);
  p.Set("v3", "/b", 7);
  CHECK(p.Under("/a", "") == std::make_pair(uint64_t{150}, size_t{2}));
  CHECK(p.Under("/a", "v1") == std::make_pair(uint64_t{50}, size_t{1}));
  CHECK(p.Under("/a", "v3") == std::make_pair(uint64_t{150}, size_t{2}));  // v3 is under /b
  p.Set("v1", "/a", 300);  // a changed volume replaces its old figure
  CHECK(p.Under("/a", "") == std::make_pair(uint64_t{350}, size_t{2}));
  p.Set("v2", "/b", 1);  // moved (as a recreated volume of that name would be)
  CHECK(p.Under("/a", "") == std::make_pair(uint64_t{300}, size_t{1}));
  CHECK(p.Under("/b", "") == std::make_pair(uint64_t{8}, size_t{2}));
  p.Set("v1", "", -1);  // gone, or no longer ours
  p.Set("unknown", "", -1);
  CHECK(p.Under("/a", "") == std::make_pair(uint64_t{0}, size_t{0}));
  p.Set("v4", "/a", -1);  // size unknown: counts nowhere
  CHECK(p.Under("/a", "") == std::make_pair(uint64_t{0}, size_t{0}));
}

TEST_CASE("Promises: what a volume uses is not promised any more, and a watch update keeps it", "[space]") {
  Promises p;
  p.Set("v1", "/a", 100);
  p.Set("v2", "/a", 50);
  p.SetUsed("v1", 30);
  CHECK(p.Under("/a", "") == std::make_pair(uint64_t{120}, size_t{2}));
  CHECK(p.Under("/a", "v1") == std::make_pair(uint64_t{50}, size_t{1}));
  CHECK(p.Under("/a", "v2") == std::make_pair(uint64_t{70}, size_t{1}));
  p.Set("v1", "/a", 200);  // grown: its use is still known
  CHECK(p.Under("/a", "") == std::make_pair(uint64_t{220}, size_t{2}));
  p.SetUsed("v2", 80);  // over its capacity: nothing more promised, never less than nothing
  CHECK(p.Under("/a", "") == std::make_pair(uint64_t{170}, size_t{2}));
  p.SetUsed("unknown", 10);  // not a volume of ours: nothing
  CHECK(p.Under("/a", "") == std::make_pair(uint64_t{170}, size_t{2}));
  CHECK(p.Used("v1") == 30);
  CHECK(p.Used("unknown") == 0);
  p.Set("v1", "", -1);
  p.Set("v1", "/a", 100);  // gone and back: its old use is forgotten
  CHECK(p.Under("/a", "") == std::make_pair(uint64_t{100}, size_t{2}));
  CHECK(p.Used("v1") == 0);
}
