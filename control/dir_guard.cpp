// The rule that guards a volume's directory: the bodies (dir_guard.hpp has the contracts).
#include "control/dir_guard.hpp"

#include "base/paths.hpp"
#include "decide/names.hpp"

bool DirGuard::Here(const Volume& v) const {
  if (cfg_.node_name.empty() || IsShared(v) || OnAllNodes(v)) return true;
  auto made_on = v.meta.annotations.find(ann::kNode);
  if (made_on != v.meta.annotations.end()) return made_on->second == cfg_.node_name;
  return v.node.empty() || v.node == cfg_.node_name;
}

bool DirGuard::BelowARoot(const std::string& path) const {
  std::string p;
  if (!NormaliseAbsolute(path, &p)) return false;
  for (const std::string& root : ConfiguredRoots(cfg_))
    if (p != root && PathWithin(p, root)) return true;
  return false;
}

std::optional<Volume> DirGuard::Overlapping(const std::string& path, const std::string& pv) const {
  std::optional<Volume> found;
  volumes_->ForEach([&](const Volume& v) {
    std::string other;  // "/r/a/db/", "/r//a/db" and "/r/a/./db" are one directory
    if (found || v.meta.name == pv || !NormaliseAbsolute(v.host_path, &other)) return;
    const bool inside = PathWithin(other, path);
    if ((inside || (PathWithin(path, other) && BelowARoot(other))) && Here(v)) found = v;
  });
  return found;
}

std::string DirGuard::Uses(const Volume& other, const std::string& path, const std::string& viewer) {
  std::string o;
  NormaliseAbsolute(other.host_path, &o);
  const std::string where = o == path ? "" : PathWithin(o, path) ? "inside " : "around ";
  if (Foreign(other, viewer))
    return "PersistentVolume " + other.meta.name + " (not of this namespace's claims) uses a directory " +
           (where.empty() ? "at " : where) + path;
  std::string text = "PersistentVolume " + other.meta.name + " (";
  if (other.has_claim_ref) text += "claim " + other.claim_ref.namespace_ + "/" + other.claim_ref.name + ", ";
  text += (other.phase.empty() ? std::string("new") : other.phase) + ") uses " + other.host_path;
  return where.empty() ? text : text + ", " + where + path;
}
