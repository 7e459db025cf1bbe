// The bodies of roots.hpp: the root directories an instance may make volumes in.
#include "fs/roots.hpp"

#include <unistd.h>

#include <cstdio>
#include <utility>

#include "base/paths.hpp"

namespace {

// Where an open root lies: its filesystem ("98:0") and its path inside that filesystem.
struct FsPlace {
  std::string path, dev, inside;
};

bool PlaceOf(const Root& root, FsPlace* out) {
  char link[64], buf[4096];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", root.fd());
  const ssize_t n = readlink(link, buf, sizeof buf - 1);
  fsops_detail::DirId id;
  if (n <= 0 || fsops_detail::GetDirId(root.fd(), &id) != 0 || !id.has_mnt) return false;
  const std::string real(buf, static_cast<size_t>(n)), mnt = std::to_string(id.mnt);
  bool found = false;
  fsops_detail::ForEachMount([&](const fsops_detail::MountLine& m) {
    if (m.id != mnt) return true;
    const std::string below = m.point == "/" ? real : real.substr(std::min(real.size(), m.point.size()));
    found = PathWithin(real, m.point) && NormaliseAbsolute(m.root + "/" + below, &out->inside);
    out->dev = m.dev;
    return false;
  });
  out->path = root.path();
  return found;
}

}  // namespace

Status RootsApart(const std::vector<std::string>& paths) {
  std::vector<FsPlace> places;
  for (const std::string& path : paths) {
    Result<Root> root = Root::Open(path);
    FsPlace place;
    if (root.ok() && PlaceOf(*root, &place)) places.push_back(place);
  }
  for (const FsPlace& outer : places)
    for (const FsPlace& inner : places) {
      if (&outer == &inner || outer.path == inner.path || outer.dev != inner.dev || !PathWithin(inner.inside, outer.inside))
        continue;
      const std::string how = inner.inside == outer.inside ? " is the same directory as " : " lies inside ";
      return Status::Invalid("the root " + inner.path + how + "the root " + outer.path +
                             " (through a symlink or a bind mount): roots must not nest (a volume of the outer one could "
                             "be, or hold, the inner root with every volume and archive in it). Give each root a directory "
                             "of its own, beside the others");
    }
  return Status::Ok();
}

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
