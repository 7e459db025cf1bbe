// Helpers for the fault tests (test/e2e/e2e_faults.cpp) on top of harness.hpp: arming faults and
// other controls on the fake, reading its request log, claims the test tracks from creation to
// the final check, a provisioner that is killed and restarted, and directory listings.
#pragma once
#include <dirent.h>
#include <signal.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "decide/reconcile.hpp"
#include "test/support/harness.hpp"

namespace faults {

using harness::FakeApi;
using harness::Reply;

// One fault as POST /fake/faults takes it: the next `count` requests with this verb (get,
// list, watch, create, patch, delete; "" = any) on this resource ("persistentvolumes",
// "events"...; "" = any) are answered `code` after `delay_ms`, with Retry-After when
// retry_after > 0. The fake does not carry out a faulted request.
struct Fault {
  std::string verb, resource;
  int code = 500;
  int count = 1;
  int retry_after = 0;
  int delay_ms = 0;
};

// Arms the fault; returns false if the fake refused it.
bool Inject(FakeApi& api, const Fault& f);

// How many requests the armed faults will still answer (GET /fake/faults); -1 if not answered.
// 0 once every armed fault was taken: the request it holds back has arrived.
int ArmedFaults(FakeApi& api);

// A control without a body, e.g. Control(api, "/fake/drop-watches"). True when answered 200.
inline bool Control(FakeApi& api, const std::string& path) { return api.Call("POST", path).code == 200; }

// Compacts the history past every watcher: first a write that no informer watches (a Lease),
// so that the newest resourceVersion is newer than any an informer has seen, then the
// compaction. (A watch whose resourceVersion is the newest one is not too old, as in
// kube-apiserver: when the last write before the compaction was one an informer saw, that
// informer would resume without a 410.)
bool CompactPastEveryWatch(FakeApi& api);

// One request the fake answered (GET /fake/requests); /fake/ controls are not listed.
struct Request {
  double t_ns = 0;  // arrival, ns since the epoch (a double: ordering only)
  std::string user, verb, resource, ns, name;
  int code = 0;
};

std::vector<Request> Requests(FakeApi& api);

// The provisioner's service-account user in the fake.
inline const char* kProvisionerUser = "system:serviceaccount:kube-system:hostpath-provisioner";

// Requests of `user` matching verb and resource ("" = any).
std::vector<Request> Filter(const std::vector<Request>& all, const std::string& user, const std::string& verb,
                            const std::string& resource);

// "code: count" pairs of the requests, e.g. "200: 512, 201: 40, 429: 3".
std::string CountByCode(const std::vector<Request>& rs);

// A claim the test made, followed until the final check.
struct TrackedClaim {
  std::string ns = "default", name, cls, uid;
  bool retain = false;
  bool bound = false;    // seen Bound (and the test wrote its marker file)
  bool deleted = false;  // the test deleted it
  std::string pv() const { return "pvc-" + uid; }
  std::string dir_name() const { return VolumeDirName(ns, name, pv()); }
};

std::string ClaimJson(const std::string& ns, const std::string& name, const std::string& cls);

// Creates the claim; returns it with its uid, or a claim with an empty uid on failure.
TrackedClaim CreateClaim(FakeApi& api, const std::string& name, const std::string& cls, bool retain);

bool DeleteClaim(FakeApi& api, TrackedClaim& c);

// Every object of a collection by "namespace/name" (or "name"). Faults match requests by verb
// and resource, not by user, so the test's own list may take one: it is retried (up to 50
// times, 50 ms apart). Throws when the list never succeeds, so a check never runs on nothing.
std::map<std::string, picojson::value> ListByKey(FakeApi& api, const std::string& collection);
inline std::map<std::string, picojson::value> Claims(FakeApi& api) { return ListByKey(api, "/api/v1/persistentvolumeclaims"); }
inline std::map<std::string, picojson::value> Volumes(FakeApi& api) { return ListByKey(api, "/api/v1/persistentvolumes"); }

// The provisioner as a process that the test kills (SIGKILL) and starts again.
class Restartable {
 public:
  Restartable(FakeApi& api, std::string pv_dir, std::map<std::string, std::string> env = {});
  void Start() { proc_ = std::make_unique<harness::Provisioner>(api_, pv_dir_, env_); ++starts_; }
  // SIGKILL, reaped; the process is gone when this returns.
  void Kill();
  void KillAndRestart();
  // Throws when the current process has exited on its own (it never should: only the test
  // kills it), with its exit code and log, so a wait does not run into its time limit blind.
  void ThrowIfExited();
  int kills() const { return kills_; }
  bool running() const { return proc_ != nullptr; }
  // The logs of every run so far, the current one last.
  std::string Logs() const { return logs_ + (proc_ ? proc_->Log() : ""); }
  harness::Provisioner* current() { return proc_.get(); }

 private:
  FakeApi& api_;
  std::string pv_dir_;
  std::map<std::string, std::string> env_;
  std::unique_ptr<harness::Provisioner> proc_;
  std::string logs_;
  int kills_ = 0, starts_ = 0;
};

// The lines of `log` containing `needle` (at most `max`), for failure messages.
std::string LinesWith(const std::string& log, const std::string& needle, size_t max = 20);

}  // namespace faults
