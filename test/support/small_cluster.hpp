// What the end-to-end tests of small-cluster mode share (e2e_small_cluster, e2e_attack_small,
// e2e_attack_small2): which instance dispatches, which claims each watches, a claim's node
// label, and the check that each claim was made once, on its own node.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <picojson.h>

#include "test/support/nodes_harness.hpp"

namespace harness {

// An object's hostpath-provisioner.io/node label ("" when it has none).
std::string NodeLabel(const picojson::value& obj);

// The instance that holds the dispatch Lease ("" when none does).
std::string Dispatcher(Nodes& n);

// Does every running instance say that it watches every claim (1) or its own node's (0)?
bool AllWatch(Nodes& n, int every);

// Entries of `dir` whose name starts with `prefix`.
int EntriesStarting(const std::string& dir, const std::string& prefix);

// PVs per claim name.
std::map<std::string, int> VolumesPerClaim(Nodes& n);

// Each claim (name -> node) is Bound to a PV of its node, whose directory is in that node's
// root and in none of the other `nodes`' roots, with one ProvisioningSucceeded event; no
// claim has two PVs.
void MadeOnceOnTheirNodes(Nodes& n, const std::map<std::string, std::string>& claims,
                          const std::vector<std::string>& nodes);

}  // namespace harness
