// Which volume holds each pathPattern directory: the bodies (pattern_dirs.hpp has the contracts).
#include "control/make/pattern_dirs.hpp"

#include "base/paths.hpp"
#include "decide/names.hpp"

PatternDirs::PatternDirs(const DirGuard* guard, const Informer<Volume>* volumes, const NameSet* created, Copying copying)
    : guard_(guard), volumes_(volumes), created_(created), copying_(std::move(copying)) {}

std::string PatternDirs::Begin(const std::string& path, const std::string& pv, const std::string& ns) {
  auto overlaps = [&](const std::string& other) { return PathWithin(other, path) || PathWithin(path, other); };
  std::string holder;
  if (std::optional<Volume> v = guard_->Overlapping(path, pv)) {
    if (DirGuard::Foreign(*v, ns)) {
      holder = DirGuard::Uses(*v, path, ns) + ": this claim cannot have that directory; the cluster's administrator must "
               "move that volume, or its data, first";
    } else if (v->phase == "Bound" || v->phase == "Pending" || v->phase.empty()) {
      holder = DirGuard::Uses(*v, path, ns) + ": the class's pathPattern gives this claim the same directory, or one "
               "inside or around it. Give this claim another name or labels, or delete the other claim and its volume first";
    } else {
      holder = DirGuard::Uses(*v, path, ns) + " and still names it (reclaim policy " + v->reclaim_policy + "). This claim "
               "gets that directory, data and all, once the PV is gone: to keep the data, set its reclaim policy to Retain "
               "first (kubectl patch pv " + v->meta.name + " -p '{\"spec\":{\"persistentVolumeReclaimPolicy\":\"Retain\"}}'), "
               "then kubectl delete pv " + v->meta.name;
    }
  }
  if (!holder.empty()) return holder;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = held_.begin(); it != held_.end();) {
    if (it->second.pv == pv || !overlaps(it->first)) {
      ++it;
      continue;
    }
    // Made and seen in the cache (told above, or gone since), made and failed, or a copy that
    // ended without a volume: no longer held.
    if (it->second.active || created_->Contains(it->second.pv) || (copying_ && copying_(it->second.pv)))
      return "another claim's volume (" + it->second.pv + ") is being made in " + it->first +
             ": the class's pathPattern gives both claims the same directory";
    it = held_.erase(it);
  }
  held_[path] = Entry{pv, true};
  return "";
}

void PatternDirs::Finish(const std::string& path, const std::string& pv, bool made) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(path);
  if (it == held_.end() || it->second.pv != pv) return;
  if (made) it->second.active = false;
  else held_.erase(it);
}

std::string PatternDirs::QuotaHolder(const std::string& quota, const std::string& pv) const {
  std::string holder;
  volumes_->ForEach([&](const Volume& v) {
    auto q = v.meta.annotations.find(ann::kQuota);
    if (holder.empty() && v.meta.name != pv && q != v.meta.annotations.end() && q->second == quota && guard_->Here(v))
      holder = v.meta.name;
  });
  return holder;
}
