// Storage capacity (issue 52): node-aware instances with CAPACITY_PROVISIONER_NAME
// (hostpath.hostpath-provisioner.io, as the DaemonSet) on a fake with the install's class
// (manifests/daemonset/storageclass.yaml, WaitForFirstConsumer) and CSIDriver (csidriver.yaml),
// each node's root a tmpfs the bench mounts (root only: otherwise the section says so and
// skips). Three figures:
//  - following the disk: one instance (node-0, CAPACITY_INTERVAL left at its 10 s) on a tmpfs
//    of kFollowDiskMiB; a file of kFollowFileMiB written into its root, as another program
//    filling the disk would, then removed, kFollowRounds times each, each at a random moment
//    (uniform over one interval, so the moment is not in step with the instance's checks); the
//    time from the file closed (or unlinked) until the node's CSIStorageCapacity, polled on the
//    fake every kPollMs, has followed (moved by half the file);
//  - at rest: N instances (node-0 .. node-(N-1), a tmpfs root each), the install's class and
//    hostpath-strict (the same with overcommit "false", so that each claim's request moves the
//    figure); once every node has both objects and no instance has written for 3 s, the
//    csistoragecapacities writes in the fake's request log over kRestSeconds, per node and
//    minute (the instances' hostpath_provisioner_capacity_writes_total, summed, alongside);
//  - bursts: on the same instances, kCapacityClaimsPerNode claims of hostpath-strict per node
//    created at once (selected-node set at their create, as node-scale's) and then deleted,
//    kCapacityRounds rounds; the capacity writes from each burst's start until every node's
//    figure shows it (after a create: 10 requests less than at rest; after a delete: what it
//    was at rest; at most 60 s) and no instance has written for 3 s (request log, and the
//    metric), per claim (and how many were of the install's class, whose figure the claims do
//    not move); and how many nodes' figures did show it. After the last create burst,
//    kRestSeconds at rest again, the claims' volumes there (a usage scan walks them).
// Not part of the default run: `build/bench --only capacity [--nodes 3,24,100]` (N = 3 and 24
// unless --nodes says otherwise).
#pragma once
#include <string>
#include <vector>

#include <picojson.h>

#include "test/bench/common.hpp"
#include "test/bench/report.hpp"

namespace bench {

constexpr int kFollowDiskMiB = 256;
constexpr int kFollowFileMiB = 128;
constexpr int kFollowRounds = 3;
constexpr int kPollMs = 20;
constexpr int kRestSeconds = 60;
constexpr int kCapacityClaimsPerNode = 10;
constexpr int kCapacityRounds = 3;

// Following the disk.
struct CapacityFollow {
  std::vector<double> fill, freed;  // s until the figure followed; -1: not within 60 s
  double writes = 0;                // the instance's capacity writes over the whole part (metric)
};

// N instances at rest and in bursts.
struct CapacityScale {
  int nodes = 0;
  double start_seconds = 0;      // until every instance answered /readyz (one after another)
  double published_seconds = 0;  // then until every node's objects existed
  long rest_writes = 0;          // request log, over kRestSeconds
  double rest_metric = 0;        // the metric's growth over the same time, summed
  long rest_bound_writes = 0;    // the same after the last create burst, its volumes there
  double rest_bound_metric = 0;
  std::vector<double> create_writes, delete_writes;  // per burst, request log
  std::vector<double> create_metric, delete_metric;  // per burst, the metric's growth
  long create_install_writes = 0, delete_install_writes = 0;  // of those, the install's class's objects, all rounds
  std::vector<double> create_seconds, delete_seconds;  // the bursts' own times (all Bound / all gone)
  int followed_create = 0, followed_delete = 0;  // nodes whose figure showed the burst, last round
};

struct Capacity {
  std::string skipped;  // why the section did not run ("" if it did)
  CapacityFollow follow;
  std::vector<CapacityScale> scale;
};

// Throws Failure when something breaks (an instance that does not start, a burst not done).
Capacity RunCapacity(const Places& at, const std::vector<int>& nodes);

void ReportCapacity(const Capacity& c, Report* rep, picojson::object* json);

}  // namespace bench
