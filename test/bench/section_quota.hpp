// Enforced sizes: one instance on a loop-mounted btrfs with qgroups (root only), claims one at a
// time of a class with quota "true" and of one without, alternately; what enforcing costs a claim.
#pragma once
#include <string>
#include <vector>

#include <picojson.h>

#include "test/bench/common.hpp"
#include "test/bench/report.hpp"

namespace bench {

struct Quota {
  std::vector<double> on, off;  // claim -> PV create, ms, with quota "true" and without
  std::string skipped;          // why there are none ("" if there are)
};

Quota RunQuota(const Places& at);

void ReportQuota(const Quota& q, Report* rep, picojson::object* json);

}  // namespace bench
