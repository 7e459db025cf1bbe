// The bodies of roots.hpp: the root directories an instance may make volumes in.
#include "fs/roots.hpp"

#include <utility>

Roots::Roots(Root primary, const std::vector<std::string>& allowed)
    : primary_(std::make_shared<const Root>(std::move(primary))) {
  for (const std::string& path : allowed)
    if (path != primary_->path()) others_[path];
}

Result<Roots::Ref> Roots::Get(const std::string& path) {
  Ref root = primary_;
  if (path != primary_->path()) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = others_.find(path);
    if (it == others_.end()) return Status::Invalid(path + " is not PV_DIR or one of ALLOWED_PV_DIRS");
    if (it->second && !it->second->StillAtPath().ok()) it->second.reset();
    if (!it->second) {
      Result<Root> opened = Root::Open(path);
      if (!opened.ok()) return opened.status();
      it->second = std::make_shared<const Root>(std::move(*opened));
    }
    root = it->second;
  }
  if (Status s = root->StillAtPath(); !s.ok()) return s.Wrap("PV_DIR");
  return root;
}

Result<Roots::Ref> Roots::Place(const std::string& path, const std::string& dir, bool create, std::string* leaf) {
  Result<Ref> root = Get(path);
  const size_t slash = dir.rfind('/');
  *leaf = slash == std::string::npos ? dir : dir.substr(slash + 1);
  if (!root.ok() || slash == std::string::npos) return root;
  Result<Root> parent = (*root)->OpenBelow(dir.substr(0, slash), create);
  if (!parent.ok()) return parent.status();
  return Ref(std::make_shared<const Root>(std::move(*parent)));
}

void Roots::RemoveEmptyParents(const std::string& path, const std::string& dir) {
  for (size_t slash = dir.rfind('/'); slash != std::string::npos && slash > 0; slash = dir.rfind('/', slash - 1)) {
    std::string leaf;
    Result<Ref> parent = Place(path, dir.substr(0, slash), false, &leaf);
    if (!parent.ok() || !(*parent)->RemoveIfEmpty(leaf).ok()) return;
  }
}

std::vector<Roots::Ref> Roots::Opened() const {
  std::vector<Ref> out{primary_};
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [path, root] : others_)
    if (root) out.push_back(root);
  return out;
}
