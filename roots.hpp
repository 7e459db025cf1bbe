// The root directories an instance may make volumes in: PV_DIR, opened at start, and
// ALLOWED_PV_DIRS, which StorageClasses name with their pvDir parameter. Each is opened once
// (Root::Open: O_NOFOLLOW, never a symlink) and kept open; one that cannot be opened yet (a
// disk not mounted) is tried again when a volume needs it. Thread-safe.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fsops.hpp"

class Roots {
 public:
  Roots(Root primary, const std::vector<std::string>& allowed) : primary_(std::move(primary)) {
    for (const std::string& path : allowed)
      if (path != primary_.path()) others_[path];
  }

  // PV_DIR's root.
  const Root& primary() const { return primary_; }

  bool Allowed(const std::string& path) const { return path == primary_.path() || others_.count(path) > 0; }

  // The open root at `path`, checked to be still at its path (Root::StillAtPath). Errors: not
  // a configured root, cannot be opened (naming why), or moved since it was opened.
  Result<const Root*> Get(const std::string& path) {
    const Root* root = &primary_;
    if (path != primary_.path()) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = others_.find(path);
      if (it == others_.end())
        return Status::Invalid(path + " is not PV_DIR or one of ALLOWED_PV_DIRS");
      if (!it->second) {
        Result<Root> opened = Root::Open(path);
        if (!opened.ok()) return opened.status();
        it->second = std::make_unique<Root>(std::move(*opened));
      }
      root = it->second.get();
    }
    if (Status s = root->StillAtPath(); !s.ok()) return s;
    return root;
  }

  // Ok while every root opened so far is still at its path (for the health check).
  Status Check() const {
    if (Status s = primary_.StillAtPath(); !s.ok()) return s.Wrap("PV_DIR");
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [path, root] : others_)
      if (root)
        if (Status s = root->StillAtPath(); !s.ok()) return s;
    return Status::Ok();
  }

  // The roots opened so far (for the orphan scan).
  std::vector<const Root*> Opened() const {
    std::vector<const Root*> out{&primary_};
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [path, root] : others_)
      if (root) out.push_back(root.get());
    return out;
  }

 private:
  const Root primary_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Root>> others_;  // null until opened
};
