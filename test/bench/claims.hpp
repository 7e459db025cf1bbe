// Claims and volumes as the bench writes them, and sending many at once: through POST
// /fake/batch (kBatch requests each, each still a create or delete of its own inside the fake)
// from kClientThreads threads.
#pragma once
#include <array>
#include <functional>
#include <string>
#include <vector>

#include <picojson.h>

#include "test/bench/common.hpp"
#include "test/bench/fake_client.hpp"

namespace bench {

// A claim the bench made, and the names the provisioner gives its PV and directory.
struct Claimed {
  std::string name, uid;
  std::string pv() const { return "pvc-" + uid; }
  std::string dir() const { return std::string(kNs) + "-" + name + "-" + pv(); }
};

// A claim of class `cls` asking for `size`; with a node, annotated with it as the scheduler's
// choice (selected-node); with `clone_of`, a clone of that claim (dataSource).
std::string ClaimJson(const std::string& name, const std::string& cls = "hostpath", const std::string& node = "",
                      const std::string& size = "1Gi", const std::string& clone_of = "");

// The PV the provisioner makes for a claim (with its finalizer when `finalizer`), under pv_dir.
std::string VolumeJson(const Claimed& c, const std::string& pv_dir, bool finalizer);

// Sends requests {method, path, body} through POST /fake/batch in batches of kBatch on
// kClientThreads threads (the fake's admin Client connections); calls done(i, result) for
// request i as its batch returns, on the sending thread. A result is {code, name, uid} or
// {code, message}. Throws Failure when a batch fails (or rethrows what done threw).
void SendBatches(const Fake& fake, const std::vector<std::array<std::string, 3>>& requests,
                 const std::function<void(size_t, const picojson::value&)>& done);

// Creates claims PREFIX-0 .. PREFIX-(n-1) of class `cls`; with nodes > 0, claim i for
// node-(i % nodes) (selected-node set at its create). on_created runs as each create returns.
std::vector<Claimed> CreateClaims(const Fake& fake, const std::string& prefix, int n,
                                  const std::function<void(const Claimed&)>& on_created, const std::string& cls = "hostpath",
                                  int nodes = 0);

// Deletes the claims; on_deleted runs as each delete returns.
void DeleteClaims(const Fake& fake, const std::vector<Claimed>& claims, const std::function<void(const Claimed&)>& on_deleted);

}  // namespace bench
