// The cleanup of deleted nodes' volumes: the bodies (node_cleanup.hpp has the contracts).
#include "control/nodes/node_cleanup.hpp"

#include <algorithm>
#include <chrono>
#include <set>
#include <vector>

#include "base/log.hpp"
#include "decide/node_labels.hpp"
#include "decide/reconcile.hpp"

NodeCleanup::NodeCleanup(const Config& cfg, std::shared_ptr<ApiEndpoint> ep, Informer<Volume>* volumes,
                         EventRecorder* recorder)
    : cfg_(cfg), ep_(ep), volumes_(volumes), recorder_(recorder),
      nodes_("Nodes", api::kNodes, &SlimForCache, std::move(ep), [this](const std::string&, const Node*) { Changed(); }),
      gone_(std::chrono::seconds(cfg.deleted_node_cleanup_seconds)) {}

NodeCleanup::~NodeCleanup() { Stop(); }

Status NodeCleanup::Start(std::function<bool()> ready, std::function<void(const std::string&)> due) {
  if (!Enabled()) return Status::Ok();
  ready_ = std::move(ready);
  due_ = std::move(due);
  if (Status s = nodes_.Start(); !s.ok()) return s;
  janitor_ = std::thread([this] { Janitor(); });
  return Status::Ok();
}

void NodeCleanup::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
  if (janitor_.joinable()) janitor_.join();
  nodes_.Stop();
}

Status NodeCleanup::CleanUp(KubeApi& api, const std::string& node) {
  if (Status s = api.GetNode(node).status(); s.code() != Status::kNotFound) return s;  // back, or the API cannot say: not now
  std::set<std::string> names;
  volumes_->ForEach([&](const Volume& v) {  // shared ones, and ours from before the node label
    if (NodeOfOurs(v) == node) names.insert(v.meta.name);
  });
  // The ones labelled with its node, which no other node's instance caches.
  Status listed = api.ListAll<Volume>(api::kVolumes, std::string(node_label::kKey) + "=" + NodeLabelValue(node),
                                      [&](Result<Volume> v) {
                                        if (v.ok() && NodeOfOurs(*v) == node) names.insert(v->meta.name);
                                      });
  if (!listed.ok()) return listed;
  Status failed = Status::Ok();
  const std::string why = "node " + node + " was deleted and has not come back within DELETED_NODE_CLEANUP_DELAY (" +
                          std::to_string(cfg_.deleted_node_cleanup_seconds) + " s)";
  for (const std::string& name : names) {
    Result<Volume> v = api.GetVolume(name);  // whole: the cache keeps no claimRef of a bound volume
    if (v.status().code() == Status::kNotFound) continue;
    if (!v.ok()) {
      LogWarn("volume " + name + ": " + v.status().message());
      failed = v.status();
      continue;
    }
    if (NodeOfOurs(*v) != node) continue;
    std::string message = why + ": deleting volume " + name;
    if (v->has_claim_ref && !v->claim_ref.uid.empty()) {
      message += " and its claim " + v->claim_ref.namespace_ + "/" + v->claim_ref.name;
      const Involved claim{"PersistentVolumeClaim", v->claim_ref.namespace_, v->claim_ref.name, v->claim_ref.uid, ""};
      recorder_->WarningOnce(claim, "NodeDeleted", message + " (its data was on that node)");
    }
    LogWarn(message + " (its data was on that node)");
    recorder_->WarningOnce({"PersistentVolume", "", v->meta.name, v->meta.uid, v->meta.resource_version}, "NodeDeleted",
                           message + " (its data was on that node)");
    Status s = Status::Ok();
    if (v->has_claim_ref && !v->claim_ref.uid.empty())
      s = api.DeleteClaim(v->claim_ref.namespace_, v->claim_ref.name, v->claim_ref.uid);
    if (s.code() == Status::kConflict) s = Status::Ok();  // made again since: not the one bound here
    std::vector<std::string> rest;
    for (const auto& f : v->meta.finalizers)
      if (f != ann::kProvisionerFinalizer) rest.push_back(f);
    if (s.ok() && rest.size() != v->meta.finalizers.size()) s = api.SetVolumeFinalizers(*v, rest);
    if (s.ok() && !v->meta.deleting) s = api.DeleteVolume(name, v->meta.uid);
    if (!s.ok() && s.code() != Status::kNotFound) {
      LogWarn("volume " + name + ": " + s.message());
      failed = s;
    }
  }
  return failed;
}

// A Node was added, changed or deleted: the janitor looks again.
void NodeCleanup::Changed() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    changed_ = true;
  }
  cv_.notify_all();
}

// Hands over each node that volumes of ours name and whose Node object has been missing for
// the delay. Looks when a Node changes, when a missing one becomes due, and every few
// seconds to a minute (volumes made meanwhile).
void NodeCleanup::Janitor() {
  ApiConnection conn(ep_);
  KubeApi api(&conn);
  if (Status s = conn.Init(); !s.ok()) {
    LogError("deleted-node cleanup: " + s.message());
    return;
  }
  const auto period = std::chrono::seconds(std::clamp(cfg_.deleted_node_cleanup_seconds / 4, 1, 60));
  auto next = GoneNodes::Clock::now() + period;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_until(lock, next, [this] { return stopped_ || changed_; });
      if (stopped_) return;
      changed_ = false;
    }
    const auto now = GoneNodes::Clock::now();
    next = now + period;
    if (!ready_() || !nodes_.Synced()) continue;
    if (!seeded_) seeded_ = NodesOfLabelledVolumes(api, &seen_);
    std::set<std::string> named = seen_, present;
    volumes_->ForEach([&](const Volume& v) {
      if (std::string node = NodeOfOurs(v); !node.empty()) named.insert(node);
    });
    nodes_.ForEach([&](const Node& n) { present.insert(n.meta.name); });
    seen_.insert(present.begin(), present.end());
    for (const std::string& node : gone_.Due(now, named, present)) due_(node);
    if (gone_.NextDue() > now) next = std::min(next, gone_.NextDue());
  }
}

bool NodeCleanup::NodesOfLabelledVolumes(KubeApi& api, std::set<std::string>* nodes) const {
  Status listed = api.ListAll<Volume>(api::kVolumes, node_label::kKey, [&](Result<Volume> v) {
    if (std::string node = v.ok() ? NodeOfOurs(*v) : ""; !node.empty()) nodes->insert(node);
  });
  if (!listed.ok()) LogWarn("deleted-node cleanup: listing the labelled PVs: " + listed.message() + "; will retry");
  return listed.ok();
}

// The node a volume of ours was made on (node-aware mode); "" for any other volume.
std::string NodeCleanup::NodeOfOurs(const Volume& v) const {
  auto by = v.meta.annotations.find(ann::kProvisionedBy);
  auto node = v.meta.annotations.find(ann::kNode);
  if (by == v.meta.annotations.end() || !cfg_.Ours(by->second) || node == v.meta.annotations.end()) return "";
  return node->second;
}
