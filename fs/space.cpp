// The bodies of space.hpp: whether a new volume fits under its root.
#include "fs/space.hpp"

#include "base/text.hpp"
#include "fs/fsops.hpp"

Result<uint64_t> StatvfsSpace::Available(const Root& root) const {
  uint64_t free_bytes = 0, total_bytes = 0;
  if (Status s = root.Space(&free_bytes, &total_bytes); !s.ok()) return s;
  return free_bytes;
}

std::string SpaceShortfall(int64_t request, uint64_t available, uint64_t promised, size_t volumes,
                           bool overcommit) {
  const uint64_t want = request > 0 ? static_cast<uint64_t>(request) : 0;
  const uint64_t room = overcommit ? available : (available > promised ? available - promised : 0);
  if (want <= room) return "";
  std::string message = "not enough space: " + HumanBytes(want) + " requested, " + HumanBytes(room) + " available";
  if (!overcommit)
    message += " (" + HumanBytes(available) + " free on the filesystem, less " + HumanBytes(promised) +
               " promised to " + std::to_string(volumes) + " other volume" + (volumes == 1 ? "" : "s") + ")";
  return message;
}

std::string SpaceAdvice(bool growth, bool overcommit, const std::string& class_name) {
  std::string advice = "free space on that filesystem or delete volumes no longer needed (retried at once when one goes), "
                       "or give the root a larger filesystem";
  if (!growth) advice += "; or delete the claim and create it again with a smaller request";
  if (!overcommit)
    advice += "; or create StorageClass " + class_name + " anew with parameter overcommit: \"true\" (parameters cannot "
              "be edited; deleting a class leaves its claims and volumes alone)";
  return advice;
}

void Promises::Set(const std::string& name, const std::string& root, int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  Volume v;
  if (auto it = by_name_.find(name); it != by_name_.end()) {
    v = it->second;
    Remove(it);
  }
  if (root.empty() || bytes < 0) return;
  if (v.root != root || v.reserved <= static_cast<uint64_t>(bytes)) v.reserved = 0;  // what it reserved has come
  v.root = root;
  v.promised = static_cast<uint64_t>(bytes);
  v.known = true;
  Add(name, v);
}

std::string Promises::Reserve(const std::string& name, const std::string& root, int64_t want, uint64_t bytes,
                              uint64_t available, bool overcommit) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [promised, volumes] = UnderLocked(root, name);
  if (std::string shortfall = SpaceShortfall(want, available, promised, volumes, overcommit); !shortfall.empty())
    return shortfall;
  Volume v;
  if (auto it = by_name_.find(name); it != by_name_.end()) {
    v = it->second;
    Remove(it);
  }
  if (v.root != root) v = Volume{};
  v.root = root;
  v.reserved = bytes;
  Add(name, v);
  return "";
}

void Promises::Release(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_name_.find(name);
  if (it == by_name_.end() || it->second.reserved == 0) return;
  Volume v = it->second;
  Remove(it);
  v.reserved = 0;
  if (v.known) Add(name, v);
}

void Promises::SetUsed(const std::string& name, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return;
  Volume v = it->second;
  v.used = bytes;
  Remove(it);
  Add(name, v);
}

uint64_t Promises::Used(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_name_.find(name);
  return it == by_name_.end() ? 0 : it->second.used;
}

std::pair<uint64_t, size_t> Promises::Under(const std::string& root, const std::string& except) const {
  std::lock_guard<std::mutex> lock(mu_);
  return UnderLocked(root, except);
}

std::pair<uint64_t, size_t> Promises::UnderLocked(const std::string& root, const std::string& except) const {
  auto it = by_root_.find(root);
  if (it == by_root_.end()) return {0, 0};
  std::pair<uint64_t, size_t> out{it->second.bytes, it->second.volumes};
  if (auto self = by_name_.find(except); self != by_name_.end() && self->second.root == root)
    out = {out.first - self->second.Outstanding(), out.second - 1};
  return out;
}

void Promises::Add(const std::string& name, Volume v) {
  Total& t = by_root_[v.root];
  t.bytes += v.Outstanding();
  ++t.volumes;
  by_name_[name] = std::move(v);
}

void Promises::Remove(std::unordered_map<std::string, Volume>::iterator it) {
  Total& t = by_root_[it->second.root];
  t.bytes -= it->second.Outstanding();
  if (--t.volumes == 0) by_root_.erase(it->second.root);
  by_name_.erase(it);
}
