// Bursts: many claims created (or deleted) at once, timed until all are Bound (or every PV and
// directory is gone), by waiting inside the fake; the provisioners' requests and each claim's
// latency read from the fake's request log (GET /fake/requests).
#pragma once
#include <sys/types.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "test/bench/baseline.hpp"
#include "test/bench/claims.hpp"
#include "test/bench/fake_client.hpp"

namespace bench {

// What a burst runs against: a fake, the PV roots, and the provisioners' pids or the baseline;
// and the claims it gets.
struct Target {
  const char* who;  // in the progress lines; its first letter starts the claims' names
  const Fake* fake;
  std::vector<std::string> pv_dirs;
  std::vector<pid_t> provisioners;  // one per instance; empty for the baseline
  Baseline* baseline = nullptr;     // nullptr for the provisioner
  std::string cls = "hostpath";     // the claims' StorageClass
  int nodes = 0;                    // > 0: claims spread over node-0 .. node-(nodes-1), selected-node set
  long kept = 0;                    // entries of each of pv_dirs that are not the bursts' (stay after a delete)
  std::function<void(bool create)> before;  // run just before a burst starts (create: a create burst)
  std::function<void(bool create)> after;   // run as soon as it is done (all Bound, or all gone)
};

struct Burst {
  double seconds = 0;              // first request sent -> all Bound / every PV and directory gone
  std::vector<double> latency_ms;  // per claim, its create -> its PV's create (creates only)
  std::map<std::string, long> requests;  // the service account's, by "verb resource"
  long writes = 0, gets = 0;             // of those: create/update/patch/delete, and single-object gets
  double cpu_seconds = 0;                // the provisioners' over the burst, summed
  long peak_rss_kib = -1;                // the largest provisioner's, sampled every ~5 ms
};

// Reads the fake's request log since the last reset: the service account's requests, and
// for creates each claim's latency from its create to its PV's create.
void ReadRequestLog(const Fake& fake, const std::vector<Claimed>& claims, Burst* out);

// Creates n claims PREFIX-i at once (create) or deletes *claims at once, and waits until all are
// Bound, or until every PV is gone and each of t.pv_dirs holds t.kept entries. Resets the fake's
// request log first. Throws Failure if not done within kBurstLimit.
Burst RunBurst(const Target& t, bool create, const std::string& prefix, int n, std::vector<Claimed>* claims);

// Rounds of bursts of n claims on a and on b, who goes first alternating by round: a create burst
// on each, then a delete burst on each. Prints a progress line after each; done(t, create,
// burst) runs after each.
void Alternate(const Target& a, const Target& b, int n, int rounds,
               const std::function<void(const Target&, bool, const Burst&)>& done);

// Creates n claims one after another, each once the previous one is Bound, then deletes them:
// the latency of a claim that does not queue behind others.
Burst Trickle(const Target& t, const std::string& prefix, int n);

}  // namespace bench
