// Storage capacity publication: the bodies (capacity_publisher.hpp has the contracts).
#include "control/nodes/capacity_publisher.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "base/log.hpp"
#include "base/quantity.hpp"
#include "decide/capacity.hpp"
#include "decide/class_params.hpp"
#include "decide/node_labels.hpp"

CapacityPublisher::CapacityPublisher(const Config& cfg, std::shared_ptr<ApiEndpoint> ep,
                                     const Informer<StorageClass>* classes, Roots* roots, const SpaceBackend* space,
                                     const Promises* promises, std::function<bool()> may_act)
    : cfg_(cfg), ep_(std::move(ep)), classes_(classes), roots_(roots), space_(space), promises_(promises),
      may_act_(std::move(may_act)) {}

CapacityPublisher::~CapacityPublisher() { Stop(); }

void CapacityPublisher::Start(const std::string& ns, std::function<bool()> ready) {
  if (!Enabled() || thread_.joinable()) return;
  ns_ = ns;
  ready_ = std::move(ready);
  thread_ = std::thread([this] { Run(); });
}

void CapacityPublisher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CapacityPublisher::Changed(bool prompt) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    changed_ = true;
    prompt_ = prompt_ || prompt;
  }
  cv_.notify_all();
}

std::map<std::string, uint64_t> CapacityPublisher::Published() const {
  std::lock_guard<std::mutex> lock(mu_);
  return published_;
}

void CapacityPublisher::Problem(const std::string& what, const std::string& message) {
  std::string& last = problems_[what];
  if (message.empty()) {
    if (!last.empty()) LogInfo("storage capacity: " + what + ": fine again");
  } else if (message != last) {
    LogWarn("storage capacity: " + message);
  }
  last = message;
}

void CapacityPublisher::Run() {
  ApiConnection conn(ep_);
  KubeApi api(&conn);
  if (Status s = conn.Init(); !s.ok()) {
    LogError("storage capacity: " + s.message());
    return;
  }
  using Clock = std::chrono::steady_clock;
  const auto interval = std::chrono::seconds(cfg_.capacity_interval_seconds);
  // The caches' first lists, before any figure (the promises come from the PVs' list).
  {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopped_ && !ready_()) cv_.wait_for(lock, std::chrono::milliseconds(100));
  }
  Clock::time_point last{}, loaded_at{};
  // What the API holds is read again once a resync period: an object someone deleted or edited
  // (an admin; the garbage collector after the Node was registered again) is then written
  // again, even if the disk did not move.
  const auto reload = std::chrono::seconds(cfg_.resync_seconds);
  bool prompt = false;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
      prompt = prompt_;
      changed_ = prompt_ = false;
    }
    // A resync: read again, and write any movement at all: a claim that fits only in space
    // freed within the 1% margin (CapacityWorthWriting) would otherwise wait for a write that
    // may never come.
    if (loaded_ && reload.count() > 0 && Clock::now() - loaded_at >= reload) {
      loaded_ = false;
      prompt = true;
    }
    if (!loaded_ && (loaded_ = Load(api))) loaded_at = Clock::now();
    if (loaded_) Pass(api, prompt);
    last = Clock::now();
    auto next = last + interval;
    if (loaded_ && reload.count() > 0) next = std::min(next, loaded_at + reload);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_until(lock, next, [this] { return stopped_ || changed_; });
    // A burst of changes (claims made one after another) is one check a second.
    if (!stopped_ && changed_) cv_.wait_until(lock, last + std::chrono::seconds(1), [this] { return stopped_; });
  }
}

bool CapacityPublisher::Load(KubeApi& api) {
  {
    // Each time: a Node deleted and registered again has a new uid, and an owner reference to
    // the old one has the garbage collector delete the object.
    Result<Node> node = api.GetNode(cfg_.node_name);
    if (node.ok()) node_uid_ = node->meta.uid;
    Problem("Node", node.ok() ? ""
                              : "cannot read Node " + cfg_.node_name +
                                    (node_uid_.empty() ? " (its objects get no owner: they stay when the node is deleted): "
                                                       : " (its objects keep the owner last read): ") +
                                    node.status().message());
    // The driver: without it the scheduler reads none of this (said once, not fatal).
    Result<CsiDriver> driver = api.GetCsiDriver(cfg_.capacity_provisioner_name);
    const std::string fix = "; create it: kubectl create -f manifests/daemonset/csidriver.yaml";
    if (!driver.ok())
      Problem("CSIDriver", "the scheduler ignores the capacity published here unless a CSIDriver named " +
                               cfg_.capacity_provisioner_name + " has storageCapacity: true: " +
                               driver.status().message() + fix);
    else if (!driver->storage_capacity)
      Problem("CSIDriver", "CSIDriver " + cfg_.capacity_provisioner_name +
                               " does not have storageCapacity: true: the scheduler ignores the capacity published "
                               "here; delete it and create it again with it" + fix.substr(fix.find(':')));
  }
  objects_.clear();
  std::vector<StorageCapacity> extra;
  Status s = api.ListAll<StorageCapacity>(api::StorageCapacities(ns_), list_all_ ? "" : CapacitySelector(cfg_.node_name),
                                          [&](Result<StorageCapacity> c) {
                                            if (!c.ok() || c->node != cfg_.node_name || !Mine(*c)) return;
                                            const std::string want = CapacityObjectName(cfg_.node_name, c->storage_class);
                                            if (c->meta.name != want) extra.push_back(*c);
                                            else objects_[c->storage_class] = *c;
                                          });
  Problem("list", s.ok() ? "" : "cannot list this node's CSIStorageCapacity objects in namespace " + ns_ + ": " +
                                    s.message() + (s.code() == Status::kForbidden ? RbacFix() : ""));
  if (!s.ok()) return false;
  list_all_ = false;
  // One made by hand for this node under another name: not this node's figure.
  for (const StorageCapacity& c : extra)
    if (may_act_() && api.DeleteStorageCapacity(ns_, c.meta.name).ok()) writes_++;
  return true;
}

bool CapacityPublisher::Mine(const StorageCapacity& c) const {
  auto driver = c.meta.labels.find(kCapacityDriverLabel);
  if (driver != c.meta.labels.end() && driver->second == NodeLabelValue(cfg_.capacity_provisioner_name)) return true;
  // Another install's (one namespace, its own CAPACITY_PROVISIONER_NAME), or one without the
  // label (its labels taken off by hand; or a CSI driver's, in a whole-namespace list): its,
  // unless its class is one this install publishes for (made again for this provisioner).
  std::optional<StorageClass> sc = classes_->Get(c.storage_class);
  return sc && ClassGetsCapacity(cfg_, *sc);
}

std::string CapacityPublisher::RbacFix() const {
  return "; the provisioner's Role must allow list, create, update and delete of csistoragecapacities in namespace " +
         ns_ + ": kubectl apply -f manifests/daemonset/rbac.yaml";
}

void CapacityPublisher::Pass(KubeApi& api, bool prompt) {
  std::vector<StorageClass> classes;
  classes_->ForEach([&](const StorageClass& sc) {
    if (ClassGetsCapacity(cfg_, sc)) classes.push_back(sc);
  });
  std::set<std::string> wanted;
  for (const StorageClass& sc : classes) {
    wanted.insert(sc.meta.name);
    Publish(api, sc, prompt);
    if (!loaded_) return;  // a conflict: read them again first
  }
  for (auto it = objects_.begin(); it != objects_.end();) {
    if (wanted.count(it->first) || !may_act_()) {
      ++it;
      continue;
    }
    Status s = api.DeleteStorageCapacity(ns_, it->second.meta.name);
    Problem("delete " + it->first, s.ok() ? "" : "cannot delete the object of class " + it->first + ", which no longer "
                                                 "gets one: " + s.message());
    if (!s.ok()) {
      ++it;
      continue;
    }
    writes_++;
    LogInfo("storage capacity: class " + it->first + " gone (or no longer WaitForFirstConsumer of " +
            cfg_.capacity_provisioner_name + "): its object " + it->second.meta.name + " deleted");
    {
      std::lock_guard<std::mutex> lock(mu_);
      published_.erase(it->first);
    }
    it = objects_.erase(it);
  }
}

void CapacityPublisher::Publish(KubeApi& api, const StorageClass& sc, bool prompt) {
  const std::string& name = sc.meta.name;
  CapacityFigure figure;
  std::string why;
  ClassParameters p;
  if (std::string bad = ParseClassParameters(cfg_, sc, &p); !bad.empty()) {
    why = bad;
  } else if (Result<Roots::Ref> root = roots_->Get(p.root); !root.ok()) {
    why = "cannot use " + p.root + ": " + root.status().message();
  } else if (Status m = p.require_mount ? (*root)->FilesystemMounted() : Status::Ok(); !m.ok()) {
    why = "requireMount: " + m.message();
  } else if (Result<uint64_t> available = space_->Available(**root); !available.ok()) {
    why = "cannot tell the free space: " + available.status().message();
  } else {
    figure = CapacityFor(p, *available, p.overcommit ? 0 : promises_->Under(p.root, "").first);
  }
  // A class that cannot have volumes here gets 0: the scheduler then sends its claims elsewhere.
  Problem("class " + name, why.empty() ? "" : "class " + name + " cannot have volumes on node " + cfg_.node_name + " (" +
                                              why + "): capacity 0 published, so no pod needing one is placed here");
  auto it = objects_.find(name);
  std::optional<uint64_t> was;
  if (it != objects_.end()) {
    Result<int64_t> bytes = QuantityToBytes(it->second.capacity);
    if (bytes.ok() && *bytes >= 0) was = static_cast<uint64_t>(*bytes);
  }
  const std::string max_size = figure.unlimited ? kUnlimitedSize : "";
  const std::string driver = NodeLabelValue(cfg_.capacity_provisioner_name);
  const bool same_shape = it != objects_.end() && it->second.maximum_volume_size == max_size &&
                          it->second.owner_node_uid == node_uid_ && it->second.meta.labels.count(kCapacityDriverLabel) &&
                          it->second.meta.labels.at(kCapacityDriverLabel) == driver;
  if (same_shape && !CapacityWorthWriting(was, figure.capacity, prompt)) return;
  if (!may_act_()) return;
  StorageCapacity c;
  c.meta.name = CapacityObjectName(cfg_.node_name, name);
  c.meta.namespace_ = ns_;
  c.meta.labels = {{node_label::kKey, NodeLabelValue(cfg_.node_name)}, {kCapacityClassLabel, NodeLabelValue(name)},
                   {kCapacityDriverLabel, driver},
                   {"app.kubernetes.io/name", "hostpath-provisioner"}};
  c.storage_class = name;
  c.node = cfg_.node_name;
  c.capacity = std::to_string(figure.capacity);
  c.maximum_volume_size = max_size;
  c.owner_node_uid = node_uid_;
  if (it != objects_.end()) c.meta.resource_version = it->second.meta.resource_version;
  Result<StorageCapacity> stored = it != objects_.end() ? api.UpdateStorageCapacity(c) : api.CreateStorageCapacity(c);
  writes_++;
  const Status& s = stored.status();
  if (s.code() == Status::kConflict || s.code() == Status::kNotFound) {
    loaded_ = false;  // changed or made by someone else meanwhile: read again, then write
    // A create refused for a name no list of this node's gave: its labels were taken off.
    list_all_ = it == objects_.end() && s.code() == Status::kConflict;
    return;
  }
  Problem("write " + name, s.ok() ? "" : "cannot write the object of class " + name + ": " + s.message() +
                                         (s.code() == Status::kForbidden ? RbacFix() : "") + " (tried again in " +
                                         std::to_string(cfg_.capacity_interval_seconds) + " s)");
  if (!s.ok()) return;
  objects_[name] = *stored;
  LogDebug(1, "storage capacity: class " + name + " on node " + cfg_.node_name + ": " + c.capacity + " bytes" +
                  (figure.unlimited ? " (any size: checkFreeSpace \"false\")" : ""));
  std::lock_guard<std::mutex> lock(mu_);
  published_[name] = figure.capacity;
}
