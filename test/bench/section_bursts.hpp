// The provisioner against the baseline client, each on a fake of its own: kTrickle claims one at
// a time (latency of a claim that does not queue), then kRounds rounds of kBurst claims created
// and deleted at once (time until all Bound / all gone, requests per volume, CPU, memory). The
// provisioner is first measured idle (section_idle.hpp), before any claim.
#pragma once
#include <vector>

#include <picojson.h>

#include "test/bench/bursts.hpp"
#include "test/bench/common.hpp"
#include "test/bench/report.hpp"
#include "test/bench/section_idle.hpp"

namespace bench {

constexpr int kTrickle = 50;                // claims created one at a time
constexpr int kBurst = 1000, kRounds = 3;   // bursts, provisioner and baseline alternating

struct Bursts {
  Idle idle;
  Burst trickle_p, trickle_b;          // the provisioner's and the baseline's claims one at a time
  std::vector<double> create_p, create_b, delete_p, delete_b;  // each round's burst, seconds
  Burst creates, deletes;              // the provisioner's bursts, pooled
};

// Throws Failure (also when the provisioner does not stop cleanly on SIGTERM).
Bursts RunBursts(const Places& at);

void ReportTrickle(const Bursts& b, Report* rep);
void ReportBursts(const Bursts& b, Report* rep, picojson::object* json);

}  // namespace bench
