// What the controller's parts share: the bodies (sync.hpp has the contracts).
#include "control/sync.hpp"

void ControllerStats::Histogram::Observe(double seconds) {
  std::lock_guard<std::mutex> lock(mu);
  int i = 0;
  while (i < kBuckets && seconds > kBounds[i]) ++i;
  counts[i]++;
  sum += seconds;
  count++;
}

void Waiters::Add(const std::string& for_key, const std::string& waiting) {
  std::lock_guard<std::mutex> lock(mu_);
  by_key_[for_key].insert(waiting);
}

std::vector<std::string> Waiters::Take(const std::string& for_key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_key_.find(for_key);
  if (it == by_key_.end()) return {};
  std::vector<std::string> out(it->second.begin(), it->second.end());
  by_key_.erase(it);
  return out;
}

void NameSet::Insert(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  names_.insert(name);
}

void NameSet::Erase(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  names_.erase(name);
}

bool NameSet::Contains(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  return names_.count(name) > 0;
}

std::vector<std::string> NameSet::TakeAll() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> all(names_.begin(), names_.end());
  names_.clear();
  return all;
}

Involved InvolvedOf(const Claim& c) {
  return {"PersistentVolumeClaim", c.meta.namespace_, c.meta.name, c.meta.uid, c.meta.resource_version};
}

Involved InvolvedOf(const Volume& v) { return {"PersistentVolume", "", v.meta.name, v.meta.uid, v.meta.resource_version}; }
