// The root directories an instance may make volumes in: PV_DIR, opened at start, and
// ALLOWED_PV_DIRS, which StorageClasses name with their pvDir parameter. Each is opened once
// (Root::Open: O_NOFOLLOW, never a symlink) and kept open; one that cannot be opened yet (a
// disk not mounted) is tried again when a volume needs it, and one of ALLOWED_PV_DIRS whose
// path names another directory since (a share mounted or unmounted there) is opened again;
// a worker still using the old one keeps it until done. Thread-safe.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "fs/fsops.hpp"

// Ok unless two of the roots at `paths` that exist are one directory, or one lies inside
// another, as the filesystem sees them: through a symlink above a root, or a bind mount of a
// directory of one root named as another (the configuration's check, NestedRoots, compares
// the paths as written). kInvalid naming both. Compared by where each lies in its filesystem
// (/proc/self/mountinfo: the filesystem, the directory mounted, the mount point) and its real
// path; a root that cannot be opened yet (a disk not mounted) is not compared.
Status RootsApart(const std::vector<std::string>& paths);

class Roots {
 public:
  using Ref = std::shared_ptr<const Root>;

  // PV_DIR's root, opened by the caller, and the paths of ALLOWED_PV_DIRS (PV_DIR among them
  // is PV_DIR's root), each opened when first asked for (Get).
  Roots(Root primary, const std::vector<std::string>& allowed);

  // PV_DIR's root.
  const Root& primary() const { return *primary_; }

  // The open root at `path`, checked to be still at its path (Root::StillAtPath). Errors: not
  // a configured root, cannot be opened (naming why), or PV_DIR moved since it was opened.
  Result<Ref> Get(const std::string& path);

  // Where the directory `dir` of a volume lies under the root at `path`: the root (Get) and
  // *leaf = dir for a directory directly inside it; for a deeper one ("ns/name", a class's
  // pathPattern) its parent opened below the root (Root::OpenBelow, made first if `create`)
  // and *leaf its last name. Errors: Get's and OpenBelow's.
  Result<Ref> Place(const std::string& path, const std::string& dir, bool create, std::string* leaf);

  // The directories above a removed volume's `dir` ("ns" of "ns/name"), each removed if it is
  // empty, deepest first, up to the root at `path` (never the root itself); one that holds
  // anything stays, and so do those above it. A volume made in one at this moment fails its
  // mkdir and is made again on its retry.
  void RemoveEmptyParents(const std::string& path, const std::string& dir);

  // Ok while PV_DIR is still the directory opened at start (for the health check; the other
  // roots are opened again when they move).
  Status Check() const { return primary_->StillAtPath().Wrap("PV_DIR"); }

  // The roots opened so far (for the orphan scan and the metrics).
  std::vector<Ref> Opened() const;

 private:
  const Ref primary_;
  mutable std::mutex mu_;
  std::map<std::string, Ref> others_;  // null until opened
};
