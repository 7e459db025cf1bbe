// Clones (docs/clones.md): for each method, a clone of a source of 1 GiB and of one of 100 000
// files (clone_timing.hpp), on an instance of its own (no usage scan, which would walk the
// sources meanwhile): byte copy on the volumes root and on ext4, reflink copy on XFS, btrfs
// snapshot on btrfs with qgroups (a class with quota "true"), the last three on loop devices
// (root only; a filesystem that cannot be made is a row saying why). On the volumes root's
// instance, kCloneRounds rounds of kCloneBurst claims at once while a byte copy of 100 000 files
// runs, alternating with the same burst without.
#pragma once
#include <vector>

#include <picojson.h>

#include "test/bench/clone_timing.hpp"
#include "test/bench/common.hpp"
#include "test/bench/report.hpp"

namespace bench {

constexpr int kCloneBurst = 100, kCloneRounds = 5;  // bursts with and without a copy running

struct Clones {
  std::vector<CloneRow> rows;                                // one per filesystem
  std::vector<double> create_copying, create_not_copying;    // each round's burst, seconds
  int copy_running = 0;                                      // bursts at whose end the copy was still running
};

Clones RunClones(const Places& at);

void ReportClones(const Clones& c, Report* rep, picojson::object* json);

}  // namespace bench
