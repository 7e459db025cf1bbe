// The claim dispatcher: the bodies (dispatcher.hpp has the contracts).
#include "control/nodes/dispatcher.hpp"

#include "base/log.hpp"
#include "base/queue.hpp"
#include "decide/cache_slim.hpp"
#include "decide/node_labels.hpp"

// While this instance holds the lease: a watch of every claim, and one worker that labels them.
struct Dispatcher::Term {
  Term(Dispatcher* d, LeaderElector* elector)
      : d(d), elector(elector), conn(d->ep_), api(&conn),
        claims("PersistentVolumeClaims (dispatch)", api::kClaims, &SlimForDispatch, d->ep_,
               [this](const std::string& key, const Claim* c) {
                 if (c != nullptr) queue.Add(key);
               }) {}

  Status Start() {
    if (Status s = conn.Init(); !s.ok()) return s;
    if (Status s = claims.Start(); !s.ok()) return s;
    worker = std::thread([this] { Work(); });
    return Status::Ok();
  }

  void Stop() {
    queue.ShutDown();
    conn.Stop();
    if (worker.joinable()) worker.join();
    claims.Stop();
  }

  void Work() {
    std::string key;
    while (queue.Get(&key)) {
      Status s = Label(key);
      if (s.ok()) {
        queue.Forget(key);
      } else {
        LogWarn("dispatching claim " + key + ": " + s.message() + "; will retry");
        queue.AddRateLimited(key, std::chrono::seconds(conn.last_retry_after()));
      }
      queue.Done(key);
    }
  }

  // Gives the claim of `key` the label DispatchLabel says, if it has another.
  Status Label(const std::string& key) {
    std::optional<Claim> c = claims.Get(key);
    if (!c || !elector->Leading()) return Status::Ok();
    std::optional<StorageClass> sc;
    if (!c->storage_class_name.empty()) sc = d->classes_->Get(c->storage_class_name);
    std::optional<std::string> want = DispatchLabel(d->cfg_, *c, sc ? &*sc : nullptr);
    auto have = c->meta.labels.find(node_label::kKey);
    if (!want || (have != c->meta.labels.end() && have->second == *want)) return Status::Ok();
    Status s = api.SetClaimLabel(*c, node_label::kKey, *want);
    if (s.code() == Status::kNotFound || s.code() == Status::kConflict) return Status::Ok();  // gone, or made again: its event comes
    if (s.ok()) {
      ++d->labelled_;
      LogDebug(1, "claim " + key + ": labelled " + node_label::kKey + "=" + *want);
    }
    return s;
  }

  Dispatcher* d;
  LeaderElector* elector;
  ApiConnection conn;
  KubeApi api;
  WorkQueue queue;
  Informer<Claim> claims;
  std::thread worker;
};

Dispatcher::Dispatcher(const Config& cfg, std::shared_ptr<ApiEndpoint> ep, const Informer<StorageClass>* classes)
    : cfg_(cfg), ep_(std::move(ep)), classes_(classes) {}

Dispatcher::~Dispatcher() { Stop(); }

void Dispatcher::Start(LeaseSpec lease) {
  lease_ = std::move(lease);
  elector_ = std::thread([this] { Elect(); });
}

void Dispatcher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (elector_.joinable()) elector_.join();
}

bool Dispatcher::Stopping() {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_;
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

// Candidate, then holder until the lease is lost (then a candidate again) or Stop.
void Dispatcher::Elect() {
  while (!Stopping()) {
    LeaderElector elector(ep_, lease_.ns, lease_.name, lease_.identity, lease_.timings);
    if (Status s = elector.Init(); !s.ok()) {
      LogError("dispatch lease: " + s.message());
      return;
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
      term_.reset();
    }
    leading_ = false;
    term->Stop();
    elector.StopRenewing();
    if (Stopping()) {
      elector.Release();
      return;
    }
    LogWarn("lost the dispatch Lease " + lease_.ns + "/" + lease_.name + "; standing for it again");
  }
}
