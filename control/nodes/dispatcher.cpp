// The claim dispatcher: the bodies (dispatcher.hpp has the contracts).
#include "control/nodes/dispatcher.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/log.hpp"
#include "base/queue.hpp"
#include "decide/cache_slim.hpp"
#include "decide/expansion.hpp"
#include "decide/node_labels.hpp"

// While this instance holds the lease: a watch of every claim, workers that label them
// (several, each with its own connection: a burst of claims is labelled in parallel), and a
// thread that counts the Nodes and says on the Lease which claims the instances watch.
struct Dispatcher::Term {
  struct Labeller {
    explicit Labeller(std::shared_ptr<const ApiEndpoint> ep) : conn(std::move(ep)), api(&conn) {}
    ApiConnection conn;
    KubeApi api;
    std::thread thread;
  };

  Term(Dispatcher* d, LeaderElector* elector)
      : d(d), elector(elector),
        claims("PersistentVolumeClaims (dispatch)", api::kClaims, &SlimForDispatch, d->ep_,
               [this](const std::string& key, const Claim* c) {
                 if (c != nullptr) {
                   if (late) queue.AddAfter(key, kLateLabel);
                   else queue.Add(key);
                 } else {
                   std::lock_guard<std::mutex> lock(sent_mu);  // gone: forget it
                   sent.erase(key);
                 }
               }) {
    for (int i = 0; i < std::max(1, d->cfg_.workers); ++i) labellers.push_back(std::make_unique<Labeller>(d->ep_));
  }

  Status Start() {
    for (auto& l : labellers)
      if (Status s = l->conn.Init(); !s.ok()) return s;
    if (Status s = counter.conn.Init(); !s.ok()) return s;
    every = d->every_claim_;  // as the Lease says
    late = every;
    if (Status s = claims.Start(); !s.ok()) return s;
    for (auto& l : labellers) l->thread = std::thread([this, l = l.get()] { Work(*l); });
    counter.thread = std::thread([this] { Count(); });
    return Status::Ok();
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(count_mu);
      count_stop = true;
    }
    count_cv.notify_all();
    counter.conn.Stop();
    if (counter.thread.joinable()) counter.thread.join();
    queue.ShutDown();
    for (auto& l : labellers) {
      l->conn.Stop();
      if (l->thread.joinable()) l->thread.join();
    }
    claims.Stop();
  }

  void Work(Labeller& l) {
    std::string key;
    while (queue.Get(&key)) {
      Status s = Label(l.api, key);
      if (s.ok()) {
        queue.Forget(key);
      } else {
        // Refused (RBAC changed since the start's check): said once, in the log and /readyz.
        if (s.code() != Status::kForbidden) LogWarn("dispatching claim " + key + ": " + s.message() + "; will retry");
        else d->SetProblem("may not label claims: " + s.message());
        queue.AddRateLimited(key, std::chrono::seconds(l.conn.last_retry_after()));
      }
      queue.Done(key);
    }
  }

  // Gives the claim of `key` the label DispatchLabel says, if it has another (takes it off if
  // it should carry none).
  Status Label(KubeApi& api, const std::string& key) {
    std::optional<Claim> c = claims.Get(key);
    if (!c || !elector->Leading()) return Status::Ok();
    // A small cluster: every instance watches every claim; a label matters only to one that
    // does not (yet), for a claim still waiting.
    if (late && !c->volume_name.empty() && !ExpansionAsked(*c)) return Status::Ok();
    std::optional<StorageClass> sc;
    if (!c->storage_class_name.empty()) sc = d->classes_->Get(c->storage_class_name);
    std::optional<std::string> want = DispatchLabel(d->cfg_, *c, sc ? &*sc : nullptr);
    auto have = c->meta.labels.find(node_label::kKey);
    const std::string has = have == c->meta.labels.end() ? "" : have->second;
    {
      std::lock_guard<std::mutex> lock(sent_mu);
      if (!want || has == *want) {
        sent.erase(key);  // nothing to do, or the cache caught up
        return Status::Ok();
      }
      auto it = sent.find(key);
      if (it != sent.end() && it->second.uid == c->meta.uid && it->second.value == *want) {
        Sent& was = it->second;
        // Labelled over this very version: the label's event is on the way.
        if (c->meta.resource_version == was.over) return Status::Ok();
        // A newer version without our label: a change made before ours (its event comes
        // next), or one made after it (a tenant's; or the watch listed again and never sends
        // ours). Looked at again after a grace; labelled again if nothing newer came by then.
        if (c->meta.resource_version != was.waiting) {
          was.waiting = c->meta.resource_version;
          queue.AddAfter(key, kOwnEventGrace);
          return Status::Ok();
        }
      }
    }
    Status s = api.SetClaimLabel(*c, node_label::kKey, *want);  // "" takes it off
    if (s.code() == Status::kNotFound || s.code() == Status::kConflict) return Status::Ok();  // gone, or made again: its event comes
    if (s.ok()) {
      std::lock_guard<std::mutex> lock(sent_mu);
      sent[key] = Sent{c->meta.uid, *want, c->meta.resource_version, ""};
      ++d->labelled_;
      d->SetProblem("");
      LogDebug(1, "claim " + key + ": " + (want->empty() ? "took off " + std::string(node_label::kKey) + "=" + has
                                                          : "labelled " + std::string(node_label::kKey) + "=" + *want));
    }
    return s;
  }

  // Once per renewal period: counts the Nodes, and says on the Lease (with the elector's next
  // renewal) which claims the instances watch (WatchEveryClaim): every claim at once; their
  // own node's only once every claim carries its label.
  void Count() {
    bool switching = false;  // the Lease says every claim, the count says own node: labelling all first
    auto grace_until = std::chrono::steady_clock::time_point{};
    std::string said;  // the last counting error logged
    int counted = -1;  // the last count
    bool was_late = late;
    const auto period = d->lease_.timings.retry_period;
    const auto look = std::max(d->lease_.timings.candidate_period, period);
    std::unique_lock<std::mutex> lock(count_mu);
    for (bool first = true; first || !count_cv.wait_for(lock, period, [this] { return count_stop; }); first = false) {
      lock.unlock();
      Result<int> nodes = counter.api.CountNodes();
      const auto now = std::chrono::steady_clock::now();
      if (!nodes.ok()) {
        if (nodes.status().message() != said)
          LogWarn("cannot count the cluster's nodes (" + nodes.status().message() + "): each instance keeps watching " +
                  (every ? "every claim" : "only its own node's claims") + " (" +
                  (nodes.status().code() == Status::kForbidden ? "apply manifests/daemonset/rbac.yaml; " : "") +
                  "not repeated while it lasts)");
        said = nodes.status().message();
      } else {
        said.clear();
        const bool want = WatchEveryClaim(d->cfg_, *nodes, every);
        const std::string count = std::to_string(*nodes) + " node" + (*nodes == 1 ? "" : "s");
        const std::string setting = " (SMALL_CLUSTER_NODES " + std::to_string(d->cfg_.small_cluster_nodes) + ")";
        if (want && !every) {
          every = true;
          grace_until = now + 2 * look;  // the instances' next looks at the Lease; labelled meanwhile
          elector->SetAnnotation(node_label::kWatchKey, node_label::kWatchAll);
          LogInfo("the cluster has " + count + setting + ": every instance now watches every claim");
        } else if (want && switching) {
          switching = false;
          LogInfo("the cluster has " + count + " again: every instance keeps watching every claim");
        } else if (!want && every && !switching) {
          switching = true;
          late = was_late = false;
          claims.ForEach([&](const Claim& c) { queue.Add(KeyOf(c.meta)); });
          LogInfo("the cluster has " + count + setting +
                  ": labelling every claim with its node, then each instance watches only its own node's");
        } else if (!want && switching && CaughtUp()) {
          switching = every = false;
          elector->SetAnnotation(node_label::kWatchKey, node_label::kWatchOwn);
          LogInfo("every claim carries its node's label: each instance now watches only its own node's claims");
        } else if (*nodes != counted && counted >= 0) {  // (hysteresis: nothing to switch)
          LogInfo("the cluster has " + count + setting + ": every instance keeps watching " +
                  (every ? "every claim" : "only its own node's claims"));
        }
        counted = *nodes;
      }
      late = every && !switching && now >= grace_until;
      if (late && !was_late)
        LogInfo("every instance watches every claim: claims are labelled with their nodes only when still waiting " +
                std::to_string(kLateLabel.count() / 1000) + " s after their last change");
      was_late = late;
      lock.lock();
      if (count_stop) break;
    }
  }

  // No claim waits for a label: the watch has listed them, none is queued, and every cached
  // claim carries the one it should.
  bool CaughtUp() {
    if (!claims.Synced() || queue.Depth() > 0) return false;
    bool all = true;
    claims.ForEach([&](const Claim& c) {
      if (!all) return;
      std::optional<StorageClass> sc;
      if (!c.storage_class_name.empty()) sc = d->classes_->Get(c.storage_class_name);
      std::optional<std::string> want = DispatchLabel(d->cfg_, c, sc ? &*sc : nullptr);
      auto have = c.meta.labels.find(node_label::kKey);
      all = !want || *want == (have == c.meta.labels.end() ? "" : have->second);
    });
    return all;
  }

  // A label set whose watch event has not come yet: a claim's other events meanwhile are not
  // labelled twice, yet the cache is what counts once it holds a newer version (Label).
  struct Sent {
    std::string uid, value;
    std::string over;     // the claim's resourceVersion the label was set over
    std::string waiting;  // a newer one, without the label, given kOwnEventGrace
  };
  static constexpr std::chrono::milliseconds kOwnEventGrace{1000};
  // A small cluster: a claim still waiting this long after its last change is labelled.
  static constexpr std::chrono::milliseconds kLateLabel{10000};

  Dispatcher* d;
  LeaderElector* elector;
  WorkQueue queue;
  std::mutex sent_mu;
  std::unordered_map<std::string, Sent> sent;
  Informer<Claim> claims;
  std::vector<std::unique_ptr<Labeller>> labellers;
  Labeller counter{d->ep_};       // its thread runs Count
  std::atomic<bool> late{false};  // label only claims still waiting, kLateLabel after their last change
  bool every = false;             // Count's: what the Lease says (or will with the next renewal)
  std::mutex count_mu;
  std::condition_variable count_cv;
  bool count_stop = false;        // under count_mu
};

Dispatcher::Dispatcher(const Config& cfg, std::shared_ptr<ApiEndpoint> ep, const Informer<StorageClass>* classes)
    : cfg_(cfg), ep_(std::move(ep)), classes_(classes) {}

Dispatcher::~Dispatcher() { Stop(); }

void Dispatcher::Start(LeaseSpec lease, bool every_claim) {
  lease_ = std::move(lease);
  every_claim_ = every_claim;
  elector_ = std::thread([this] { Elect(); });
}

void Dispatcher::Stop() {
  std::shared_ptr<LeaderElector> electing;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    electing = elector_now_;
  }
  cv_.notify_all();
  if (electing) electing->CancelAcquire();  // (outside mu_: the elector calls back with its own lock held)
  if (elector_.joinable()) elector_.join();
}

std::string Dispatcher::CheckAccess(KubeApi& api, const LeaseSpec& lease, const std::function<bool()>& stopping,
                                    bool* every_claim) {
  // An answer either way: allowed (found or not), or forbidden.
  auto answered = [](const Status& s) { return s.ok() || s.code() == Status::kNotFound || s.code() == Status::kForbidden; };
  Status lease_read, patch;
  for (int wait = 1;; wait = std::min(10, wait * 2)) {
    Result<Lease> got = api.GetLease(lease.ns, lease.name);
    lease_read = got.status();
    if (got.ok() && every_claim != nullptr) {
      auto it = got->meta.annotations.find(node_label::kWatchKey);
      *every_claim = it != got->meta.annotations.end() && it->second == node_label::kWatchAll;
    }
    // A name no claim has (an object name has no "_"): the dry run patches nothing, and RBAC
    // answers before the name is looked up.
    patch = api.MayPatchClaims(lease.ns, "hostpath-provisioner_access-check");
    if (answered(lease_read) && answered(patch)) break;
    LogWarn("cannot tell yet whether this instance may take part in the claim dispatch (the API server did not answer: " +
            (answered(lease_read) ? patch : lease_read).message() + "); asking again in " + std::to_string(wait) + " s");
    for (int i = 0; i < wait * 10; ++i) {
      if (stopping()) return "";
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  std::vector<std::string> missing;
  if (lease_read.code() == Status::kForbidden)
    missing.push_back("may not get the Lease " + lease.ns + "/" + lease.name + " (" + lease_read.message() + ")");
  if (patch.code() == Status::kForbidden) missing.push_back("may not patch PersistentVolumeClaims (" + patch.message() + ")");
  std::string out;
  for (const std::string& m : missing) out += (out.empty() ? "" : ", and ") + m;
  return out;
}

std::string Dispatcher::Problem() {
  std::shared_ptr<LeaderElector> electing;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!problem_.empty()) return problem_;
    electing = elector_now_;
  }
  if (electing == nullptr || electing->Leading()) return "";
  Status s = electing->LastError();
  return s.code() == Status::kForbidden ? "may not take the dispatch Lease: " + s.message() : "";
}

void Dispatcher::SetProblem(const std::string& problem) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!problem.empty() && problem_.empty())  // once, not once per claim
    LogWarn("claims wait: this instance holds the dispatch Lease but " + problem +
            " (RBAC changed since it started? apply manifests/daemonset/rbac.yaml; not repeated while it lasts)");
  problem_ = problem;
}

bool Dispatcher::Stopping() {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_;
}

long Dispatcher::Received() {
  std::lock_guard<std::mutex> lock(mu_);
  return received_before_ + (term_ ? term_->claims.Received() : 0);
}

void Dispatcher::ClassChanged(const std::string& name) {
  std::shared_ptr<Term> term;
  {
    std::lock_guard<std::mutex> lock(mu_);
    term = term_;
  }
  if (term == nullptr) return;
  term->claims.ForEach([&](const Claim& c) {
    if (c.storage_class_name == name) term->queue.Add(KeyOf(c.meta));
  });
}

void Dispatcher::Observed(const Lease& lease) {
  auto it = lease.meta.annotations.find(node_label::kWatchKey);
  const bool every = it != lease.meta.annotations.end() && it->second == node_label::kWatchAll;
  if (every_claim_.exchange(every) != every && on_watch_) on_watch_(every);
}

// Candidate, then holder until the lease is lost (then a candidate again) or Stop.
void Dispatcher::Elect() {
  while (!Stopping()) {
    auto owned = std::make_shared<LeaderElector>(ep_, lease_.ns, lease_.name, lease_.identity, lease_.timings);
    LeaderElector& elector = *owned;
    elector.Observe([this](const Lease& l) { Observed(l); });
    if (Status s = elector.Init(); !s.ok()) {
      LogError("dispatch lease: " + s.message());
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      elector_now_ = owned;
    }
    if (!elector.Acquire([this] { return Stopping(); })) return;
    LogInfo("dispatching claims to nodes: this instance holds the Lease " + lease_.ns + "/" + lease_.name);
    {
      std::lock_guard<std::mutex> lock(mu_);
      lost_ = false;
    }
    elector.StartRenewing([this] {
      {
        std::lock_guard<std::mutex> lock(mu_);
        lost_ = true;
      }
      cv_.notify_all();
    });
    auto term = std::make_shared<Term>(this, &elector);
    if (Status s = term->Start(); !s.ok()) LogError("dispatching claims: " + s.message());
    {
      std::lock_guard<std::mutex> lock(mu_);
      term_ = term;
    }
    leading_ = true;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || lost_; });
      received_before_ += term->claims.Received();
      term_.reset();
      problem_.clear();  // the next holder's to find
    }
    leading_ = false;
    term->Stop();
    elector.StopRenewing();
    if (Stopping()) {
      elector.Release();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      elector_now_.reset();
    }
    LogWarn("lost the dispatch Lease " + lease_.ns + "/" + lease_.name + "; standing for it again");
  }
}
