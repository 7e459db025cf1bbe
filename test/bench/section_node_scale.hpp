// Node scale (issues 46 and 54): N node-aware instances (NODE_NAME node-0 .. node-(N-1), a
// root each) on ONE fake API server with N registered nodes, a WaitForFirstConsumer class, and
// ClaimsPerNode(N) claims per node created at once (selected-node set at their create, as the
// scheduler would set it), then all deleted; against one single-node instance doing the same
// claims on a fake of its own (the same nodes and class). ScaleRounds(N) rounds, who goes first
// alternating. The report ends with the cases side by side (ReportNodeScale). Not part of the
// default run: `build/bench --only node-scale [--nodes 3,24,100]`.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <picojson.h>

#include "test/bench/common.hpp"
#include "test/bench/proc_sample.hpp"
#include "test/bench/report.hpp"

namespace bench {

// A small cluster (issue 54: two to five nodes, the clusters this tool is mostly for) gets 100
// claims per node, so that its bursts are as large as the node-aware section's (300 at N = 3);
// a large one 10 per node (issue 46's case). Small bursts are cheap: 5 rounds, else 3.
constexpr int kSmallCluster = 5;
inline int ClaimsPerNode(int nodes) { return nodes <= kSmallCluster ? 100 : 10; }
inline int ScaleRounds(int nodes) { return nodes <= kSmallCluster ? 5 : 3; }

// One side (the N instances, or the single one), each round's figures.
struct ScaleSide {
  int instances = 0;
  double start_seconds = 0;                   // until every instance answered /readyz (one after another)
  std::vector<double> create_bound;           // first create -> all claims Bound, s
  std::vector<double> create_pvs;             // the first claim's create -> the last PV create (request log), s
  std::vector<double> label_delay;            // node-aware: each claim's create -> the dispatcher's label (request log), s
  std::vector<double> delete_gone;            // first delete -> every PV and directory gone, s
  std::vector<double> create_cpu, delete_cpu; // the instances' summed, from the burst's start until quiet, s
  std::vector<double> fake_cpu;               // the fake API server's over a create and a delete burst, s
  std::vector<double> instance_cpu;           // each instance's CPU over the create bursts (all rounds)
  Memory before, after;                       // the largest instance (by VmRSS): before the first burst, after a create burst (largest)
                                              // (after: the dispatcher's apart, in dispatcher_after)
  Memory dispatcher_after;                    // node-aware: the instance that labels claims, after a create burst (largest)
  double cached_claims = 0, cached_pvs = 0;   // the largest of the instances' caches after a create burst
  long claim_watches = 0, pv_watches = 0;     // watches the instances opened on claims and PVs (from start-up)
  std::map<std::string, long> watches;        // every watch they opened, by resource
  std::vector<double> claim_events, pv_events;  // events in the fake's history over a create and a delete burst
  std::vector<double> received;               // objects the instances' watches received over a create and a delete burst
  std::map<std::string, long> requests;       // the instances' requests in the last create burst, by "verb resource"
  std::vector<double> requests_per_claim;     // the instances' requests in each create burst (watches too), per claim
};

struct NodeScale {
  int nodes = 0;
  ScaleSide aware, single;
};

// One NodeScale per entry of `nodes`. Throws Failure.
std::vector<NodeScale> RunNodeScale(const Places& at, const std::vector<int>& nodes);

void ReportNodeScale(const std::vector<NodeScale>& runs, Report* rep, picojson::object* json);

}  // namespace bench
