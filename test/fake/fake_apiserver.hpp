// A fake Kubernetes API server for tests and the demo: real HTTPS on loopback, bearer-token
// authentication (no token: system:anonymous, as anonymous auth is on by default), RBAC, the
// REST semantics of kube-apiserver for the resources the provisioner uses (Status bodies,
// resourceVersion, conflicts, finalizers, patches, /status subresources, label selectors),
// watches served from a bounded history that starts with the server, as the watch cache does,
// the PV controller and pvc-protection, the expand controller (fake_expand.hpp) and the
// PersistentVolumeClaimResize admission plugin, the volume part of kube-scheduler
// (fake_scheduler.hpp: nodes, pods, WaitForFirstConsumer claims, CSIStorageCapacity; the
// CSIDriver and CSIStorageCapacity kinds: fake_csi.hpp), the not-ready taint of new
// nodes and the node lifecycle controller's condition taints (fake_nodelifecycle.hpp), and test
// controls under /fake/ (fault injection, dropped watches, compaction, pause, delay, token
// rotation, request log). unit_fake_real_server.cpp holds the cases where a comparison with a
// real 1.24 server found the fake answering otherwise.
//
// Growing a claim, as Kubernetes 1.24 does it (unit_fake_expand.cpp): only a bound claim's
// spec.resources.requests.storage may change, never downwards (422, "spec.resources.requests.
// storage: Forbidden: field can not be less than previous value"), and up only when the claim's
// StorageClass has allowVolumeExpansion: true (403 Forbidden from PersistentVolumeClaimResize);
// then the expand controller records a Warning ExternalExpanding event and sets no annotation,
// and the volume's provisioner finishes the expansion through the claim's /status as
// external-resizer does. RecoverVolumeExpansionFailure is off, as in 1.24 (status.
// allocatedResources and status.resizeStatus are dropped), although /version says 1.32.
//
// Usage in a test:
//   fake::ApiServer api({.dir = tmpdir});
//   REQUIRE(api.Start().ok());   // writes DIR/ca.crt, kubeconfigs, serviceaccount/, port
//   ... talk to https://127.0.0.1:api.port() with api.admin_token() or api.sa_token() ...
//   api.Stop();                 // also done by the destructor
//
// Test controls (admin token only; POST needs a Content-Length, e.g. curl -d ''):
//   POST /fake/faults {"verb","resource","code","count","retryAfter","delayMs"}  next `count`
//        matching resource requests (after authn/authz) fail with `code` and a Status body;
//        code 0 (with delayMs): they are held back delayMs, then carried out as usual
//   POST /fake/clear-faults  disarms every fault not yet taken
//   POST /fake/drop-watches | /fake/compact | /fake/pause?seconds=N | /fake/delay?ms=N
//   POST /fake/remaining-item-count?on=true|false  off: a paged list's metadata leaves out
//        remainingItemCount, as a server whose RemainingItemCount feature gate is off does (versions
//        before its GA let it be turned off) or one older than 1.15
//   POST /fake/hold-claim-binding?on=true|false  the PV controller binds a volume's side only,
//        and the claims' sides when turned off (PvController::HoldClaimSide)
//   POST /fake/reset-connections  every connection is dropped once this answer is sent (no
//        close_notify), as when the API server restarts; the state is kept
//   POST /fake/rotate-token (new DIR/serviceaccount/token by rename; the old token is revoked)
//   GET  /fake/requests, /fake/denials (JSON arrays; t_ns exact integers); POST /fake/reset-requests
//   GET  /fake/wait?resource=R&resourceVersion=RV&until=Bound|Deleted&prefix=P&prefixPath=a.b&count=N
//        &timeoutSeconds=T  waits until N distinct objects of R (by name) whose string at
//        prefixPath (default metadata.name) starts with P were seen, after RV, in status.phase
//        Bound (until=Bound) or deleted (until=Deleted); answers {"count","lastNs"} (200), or
//        504 with the count so far. An observer for benchmarks that costs no watch traffic: it
//        looks at the history every 2 ms, so it answers up to 2 ms late, but lastNs is exact.
//
// One thread serves every connection (fake_https.hpp): delays and pauses hold a request without
// holding the thread, and watches (fake_watch.hpp) get what was written after each round of
// requests.
//
// Known differences from kube-apiserver: pods are scheduled but never run (no kubelet: a pod
// stays Pending, and a deleted pod is removed at once rather than after its grace period; a
// claim being deleted keeps its pvc-protection finalizer while a scheduled pod names it, as the
// pvcprotection controller keeps it); nodes exist only when a test makes them (fake_kubelet.hpp
// makes one as a kubelet registers, and no node's Ready turns Unknown when nothing posts its
// status); deletionGracePeriodSeconds and propagationPolicy are ignored; no OpenAPI, no server-side apply.
#pragma once
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test/fake/fake_admission.hpp"
#include "test/fake/fake_expand.hpp"
#include "test/fake/fake_https.hpp"
#include "test/fake/fake_labels.hpp"
#include "test/fake/fake_nodelifecycle.hpp"
#include "test/fake/fake_pvcontroller.hpp"
#include "test/fake/fake_rbac.hpp"
#include "test/fake/fake_requestinfo.hpp"
#include "test/fake/fake_scheduler.hpp"
#include "test/fake/fake_store.hpp"
#include "test/fake/fake_table.hpp"
#include "test/fake/fake_tls.hpp"
#include "test/fake/fake_watch.hpp"

namespace fake {

struct ApiServerOptions {
  std::string dir;                      // created; receives ca.crt, kubeconfigs, serviceaccount/, port
  int port = 0;                         // 0: any free port
  std::vector<std::string> rbac_files;  // empty: the service account may do everything
  std::string sa_namespace = "kube-system";
  std::string sa_name = "hostpath-provisioner";
  size_t history = 10000;    // watch events kept per resource
  int bookmark_seconds = 5;  // interval of BOOKMARK events for watches that allow them
};

// One answered request, as GET /fake/requests lists it.
struct RequestRecord {
  int64_t t_ns = 0;  // when it arrived, ns since the epoch
  std::string user, verb, resource, subresource, ns, name;
  std::string resource_version;  // the query's resourceVersion (a list's or watch's start), if any
  int code = 0;
};

// A fault armed by POST /fake/faults.
struct Fault {
  std::string verb, resource;  // "" matches any
  int code = 500;              // 0: held back delay_ms, then carried out
  int count = 1;
  int retry_after = 0;
  int delay_ms = 0;
};

class ApiServer {
 public:
  explicit ApiServer(ApiServerOptions opts) : opts_(std::move(opts)), store_(opts_.history), ctl_(store_), expand_(store_), sched_(store_), nodes_(store_) {}
  ~ApiServer() { Stop(); }
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Creates the directory and its files, binds 127.0.0.1:port and serves on a thread. Returns
  // once requests are accepted. Errors: unwritable directory, unreadable RBAC file, bind failure.
  Status Start();
  // Ends every watch and stops serving; idempotent.
  void Stop();

  int port() const { return port_; }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  const std::string& dir() const { return opts_.dir; }
  std::string admin_token() const { return admin_token_; }
  std::string sa_token() const;
  std::string sa_user() const { return "system:serviceaccount:" + opts_.sa_namespace + ":" + opts_.sa_name; }

  // Test controls, also reachable over HTTP under /fake/ (see HandleControl).
  void AddFault(const Fault& f);
  void ClearFaults();
  int ArmedFaults();  // requests the armed faults will still answer (their counts summed)
  void DropWatches();
  void Compact();
  void Pause(double seconds);
  void SetDelayMs(int ms) { delay_ms_ = ms; }
  // Writes a new service-account token (atomically, by rename) and revokes the old one.
  Status RotateToken();
  std::vector<RequestRecord> Requests() const;
  void ResetRequests();
  // The RBAC denials as a JSON array of {t_ns, user, verb, resource, namespace, name, message}.
  std::string DenialsJson() const;
  // Every request but /fake/ ones as a JSON array of {t_ns, user, verb, resource, namespace, name, code};
  // resource includes "/status" for the subresource; a successful create names the object made.
  std::string RequestsJson() const;
  // A copy of the stored object, or null Json.
  Json GetObject(const std::string& plural, const std::string& ns, const std::string& name);

 private:
  class Pending;
  // An answer: its code and body (a stored object is answered as stored, not copied).
  struct Reply {
    Reply() = default;
    Reply(int c, Json b) : code(c), ref(std::make_shared<const Json>(std::move(b))) {}
    Reply(int c, JsonRef b) : code(c), ref(std::move(b)) {}
    const Json& body() const { return *ref; }
    int code = 200;
    JsonRef ref = std::make_shared<const Json>();
  };
  // The answer for the object of the last write to `plural`. Callers hold store_.mu.
  Reply AnswerWrite(int code, const std::string& plural) { return Reply(code, store_.bucket(plural).Last()->object); }
  // The event loop's background work, after each round's answers went out: the controllers
  // and the scheduler react to the round's writes (and to each other's), as real ones react to
  // a write after it was answered.
  void RunControllers();

  // How far Dispatch got with one request, kept between its calls.
  struct Progress {
    RequestRecord rec;          // its t_ns: when the request arrived
    bool waited = false;        // past the pause and the delay
    bool fault_looked = false;  // a fault was looked for (and taken, if `faulted`)
    bool faulted = false;
    Fault fault;
  };
  // What Dispatch did: answered in its Response; or wants to be called again at `again`
  // (a pause, a delay); or hands the answer to `stream` (a watch, /fake/wait).
  struct Outcome {
    Clock::time_point again{};
    bool until_unpaused = false;  // `again` is the end of the pause, which may move
    std::unique_ptr<Exchange> stream;
  };
  static Outcome Later(Clock::time_point t, bool until_unpaused = false);
  static Outcome Streamed(std::unique_ptr<Exchange> stream);

  Status WriteFiles();
  void WakeLoop();
  Outcome Dispatch(const httplib::Request& req, Progress& p, httplib::Response& res);
  const User* Authenticate(const httplib::Request& req);
  std::unique_ptr<Exchange> HandleControl(const httplib::Request& req, httplib::Response& res);
  bool TakeFault(const RequestInfo& info, Fault& out);
  static RequestInfo Resolve(const httplib::Request& req);
  static void Describe(RequestRecord& rec, const RequestInfo& info);
  static void NameMade(RequestRecord& rec, const RequestInfo& info, const Reply& r);
  Reply Serve(const RequestInfo& info, const httplib::Request& req);
  static bool ServedSubresource(const RequestInfo& info);
  std::string Batch(const Json& body);
  Reply NonResource(const RequestInfo& info);
  Reply Discovery(const RequestInfo& info);
  Reply Get(const RequestInfo& info);
  Reply List(const RequestInfo& info, const httplib::Request& req);
  Reply Create(const RequestInfo& info, const std::string& body);
  Reply Update(const RequestInfo& info, const std::string& body);
  Reply Patch(const RequestInfo& info, const httplib::Request& req);
  Reply Delete(const RequestInfo& info, const std::string& body);
  Reply DeleteCollection(const RequestInfo& info, const httplib::Request& req);
  Reply StoreUpdateLocked(const RequestInfo& info, Json proposed);
  Reply DeleteLocked(const RequestInfo& info, const Json& options);
  std::unique_ptr<Exchange> Watch(const RequestInfo& info, const httplib::Request& req, httplib::Response& res);
  std::unique_ptr<Exchange> WaitFor(const httplib::Request& req, httplib::Response& res);
  void Record(const RequestRecord& r);

  ApiServerOptions opts_;
  Store store_;
  PvController ctl_;
  ExpandController expand_;
  Scheduler sched_;
  NodeLifecycle nodes_;
  Rbac rbac_;
  bool rbac_enabled_ = false;
  std::unique_ptr<HttpsLoop> loop_;
  std::thread thread_;
  int port_ = 0;
  std::string ca_pem_;
  std::string admin_token_;
  User admin_user_, sa_user_;  // who the two tokens are (Start)
  const User anonymous_user_{"system:anonymous", {"system:unauthenticated"}};
  mutable std::mutex auth_mu_;
  std::string sa_token_;
  std::mutex ctl_mu_;
  std::vector<Fault> faults_;
  std::atomic<int> delay_ms_{0};
  std::atomic<bool> remaining_count_{true};  // /fake/remaining-item-count
  WatchControls watch_;  // guarded by store_.mu
  mutable std::mutex log_mu_;
  std::vector<RequestRecord> requests_;
  std::vector<std::pair<RequestRecord, std::string>> denials_;  // with the message
};

}  // namespace fake
