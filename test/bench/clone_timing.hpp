// Timing clones on one instance: two source claims filled (kCloneBytes of random data in
// kCloneBigFiles files, and kCloneFiles files of kCloneFileBytes), flushed, then a clone of each,
// timed from its create until Bound, with the provisioner's own copy time and the method its PV
// names.
#pragma once
#include <cstdint>
#include <string>

#include "test/bench/claims.hpp"
#include "test/bench/fake_client.hpp"
#include "test/bench/provisioner.hpp"

namespace bench {

constexpr const char* kCloneClass = "clones";         // the class of clones and their sources
constexpr const char* kCloneSize = "2Gi";             // their request: a btrfs qgroup limit with room for 1 GiB
constexpr uint64_t kCloneBytes = 1ULL << 30;          // the large source: that much random data
constexpr int kCloneBigFiles = 4;                     // in that many files
constexpr int kCloneDirs = 100, kCloneFiles = 100000; // the source of small files: that many in that many directories
constexpr size_t kCloneFileBytes = 4096;              // of that size each

struct CloneTimes {
  double bound = -1;   // the clone's create -> Bound
  double copy = -1;    // the provisioner's own figure: its clone_seconds_total grew by that much
  std::string method;  // its PV's clone-method annotation
};

// A filesystem's row: its clones of the two sources, or why there are none.
struct CloneRow {
  std::string label, expected, skipped;  // expected: the method its clones should be made with
  CloneTimes gib, files;                 // of the kCloneBytes source, of the kCloneFiles one
};

// Creates claim PREFIX-0 of kCloneClass (kCloneSize), a clone of `source` unless it is empty;
// with `seconds`, waits until it is Bound and says how long that took from its create.
Claimed CreateCloneClaim(const Fake& fake, const std::string& prefix, const std::string& source, double* seconds);

// On an instance whose class kCloneClass makes volumes under `root`: the two sources (claims
// big-0 and files-0), flushed, then a clone of each, one after the other, into *row (and a
// progress line). Returns the source of small files.
Claimed MeasureClones(const Fake& fake, const Provisioner& p, const std::string& root, CloneRow* row);

}  // namespace bench
