// The steps for a volume on every node: the bodies (every_node.hpp has the contracts).
#include "control/nodes/every_node.hpp"

#include "base/log.hpp"
#include "control/remove/archiving.hpp"
#include "fs/fsops.hpp"

namespace {

std::vector<std::string> Without(const Volume& v, const std::vector<std::string>& nodes) {
  std::vector<std::string> rest;
  for (const std::string& f : v.meta.finalizers) {
    bool drop = false;
    for (const std::string& n : nodes) drop = drop || f == NodeFinalizer(n);
    if (!drop) rest.push_back(f);
  }
  return rest;
}

// An API answer that needs no one's attention: a conflict (a newer version is on its way
// through the watch) or the PV already gone (ok); anything else is logged.
Status Quiet(const Volume& v, const Status& s) {
  if (s.code() == Status::kNotFound) return Status::Ok();
  if (s.code() != Status::kConflict) LogWarn("volume " + v.meta.name + ": " + s.message());
  return s;
}

}  // namespace

Status EveryNodeSteps::Join(KubeApi& api, const Volume& v, const Action& a, const Involved& pv) {
  const std::string path = a.root + "/" + a.dir_name;
  if (std::optional<Volume> other = guard_->Overlapping(path, v.meta.name))
    return Told(pv, reason::kProvisioningFailed,
                "cannot make " + path + " on node " + cfg_.node_name + ": " + DirGuard::Uses(*other, path) +
                    "; nothing made or changed there (will retry; delete that volume, or this one)");
  Status s = Dir(a, true, [&](const Root& root, const std::string& leaf) { return root.MakeDir(leaf, a.dir_mode, a.uid, a.gid); });
  if (!s.ok()) {
    const std::string hint = FixHint(s);
    return Told(pv, reason::kProvisioningFailed,
                "cannot make directory " + path + " on node " + cfg_.node_name + ": " + s.message() +
                    (hint.empty() ? "" : "; " + hint));
  }
  std::vector<std::string> finalizers = v.meta.finalizers;
  finalizers.push_back(NodeFinalizer(cfg_.node_name));
  if (s = api.SetVolumeFinalizers(v, finalizers); !s.ok()) return Quiet(v, s);
  LogInfo("volume " + v.meta.name + ": made " + path + " on node " + cfg_.node_name);
  return Status::Ok();
}

Status EveryNodeSteps::Leave(KubeApi& api, const Volume& v, const Action& a, const Involved& pv) {
  const std::string path = a.root + "/" + a.dir_name;
  std::string done = "kept " + path + " (reclaim policy " + v.reclaim_policy + ")";
  std::optional<Volume> other = a.remove_dir && a.on_delete != "retain" ? guard_->Overlapping(path, v.meta.name) : std::nullopt;
  if (other) {
    const std::string message = "kept " + path + " on node " + cfg_.node_name + " as it is, not " +
                                (a.on_delete == "archive" ? "archived: " : "removed: ") + DirGuard::Uses(*other, path) +
                                "; remove what is left by hand once that volume is gone";
    LogWarn("volume " + v.meta.name + ": " + message);
    recorder_->Warning(pv, reason::kVolumeFailedDelete, message);
  } else if (a.remove_dir) {
    if (a.on_delete != "delete" && a.on_delete != "archive" && a.on_delete != "retain")
      return Told(pv, reason::kVolumeFailedDelete,
                  "annotation " + std::string(ann::kOnDelete) + "=\"" + a.on_delete + "\" is not \"archive\" or \"retain\" "
                  "(or absent: delete); refusing to touch " + path + " on node " + cfg_.node_name);
    Status s;
    if (a.on_delete == "delete") {
      s = Dir(a, false, [&](const Root& root, const std::string& leaf) { return root.RemoveTree(leaf); });
      done = "removed " + path;
    } else if (a.on_delete == "archive") {
      s = Archive(a, &done);
    } else {
      done = "kept " + path + " (class parameter onDelete: \"retain\"): remove it by hand when it is no longer needed";
    }
    if (s.ok() && a.path_pattern && a.on_delete != "retain") roots_->RemoveEmptyParents(a.root, a.dir_name);
    if (!s.ok()) {
      const std::string hint = FixHint(s);
      return Told(pv, reason::kVolumeFailedDelete,
                  (a.on_delete == "archive" ? "archiving " : "removing ") + path + " on node " + cfg_.node_name +
                      " failed: " + s.message() + (hint.empty() ? "" : "; " + hint) + "; will retry");
    }
  }
  // Said before the finalizer goes: a conflict there retries, and the retry finds it moved.
  const bool kept = !other && a.remove_dir && a.on_delete != "delete";
  if (other) done = "kept " + path + " (another volume's directory overlaps it)";
  if (kept) {
    LogInfo("volume " + v.meta.name + ": " + done + " on node " + cfg_.node_name);
    recorder_->Normal(pv, a.on_delete == "archive" ? reason::kVolumeArchived : reason::kVolumeRetained,
                      "on node " + cfg_.node_name + ": " + done);
  }
  if (Status s = api.SetVolumeFinalizers(v, Without(v, {cfg_.node_name})); !s.ok()) return Quiet(v, s);
  if (!kept) LogInfo("volume " + v.meta.name + ": " + done + " on node " + cfg_.node_name);
  return Status::Ok();
}

// Moves a.dir_name here into its root's archive folder (archiving.hpp); *done says where it
// went, or where an earlier attempt put it. A volume on every node has no limit (no quota).
Status EveryNodeSteps::Archive(const Action& a, std::string* done) {
  std::string note;
  const int64_t keep_seconds = ArchiveSeconds(a.archive_for, &note);
  const int64_t now = NowSeconds();
  Result<std::string> moved = Status::NotFound(a.dir_name);
  Status s = Dir(a, false, [&](const Root& parent, const std::string& leaf) {
    Result<Roots::Ref> root = roots_->Get(a.root);
    if (!root.ok()) return root.status();
    moved = ArchiveVolumeDir(**root, parent, leaf, a.dir_name, QuotaId{}, now, keep_seconds);
    return moved.ok() || moved.status().code() == Status::kNotFound ? Status::Ok() : moved.status();
  });
  if (!s.ok()) return s;
  if (moved.ok()) {
    *done = ArchivedMessage(a.root, a.dir_name, *moved, now, keep_seconds) + note;
  } else {
    Result<Roots::Ref> root = roots_->Get(a.root);
    *done = root.ok() ? ArchivedBefore(**root, a.dir_name) : a.root + "/" + a.dir_name + " was already gone";
  }
  return Status::Ok();
}

Status EveryNodeSteps::AnyHolderExists(KubeApi& api, const Volume& v, bool* any) {
  *any = false;
  for (const std::string& node : FinalizerNodes(v)) {
    Status s = api.GetNode(node).status();
    if (s.ok()) {
      *any = true;
      return s;
    }
    if (s.code() != Status::kNotFound) return s;
  }
  return Status::Ok();
}

Status EveryNodeSteps::PruneGone(KubeApi& api, const Volume& v, const Involved& pv, bool* others_left) {
  std::vector<std::string> gone;
  *others_left = false;
  for (const std::string& node : FinalizerNodes(v)) {
    if (node == cfg_.node_name) continue;
    Status s = api.GetNode(node).status();
    if (s.code() == Status::kNotFound) {
      gone.push_back(node);
    } else if (s.ok()) {
      *others_left = true;
    } else {
      return Quiet(v, s);
    }
  }
  if (gone.empty()) return Status::Ok();
  if (Status s = api.SetVolumeFinalizers(v, Without(v, gone)); !s.ok()) return Quiet(v, s);
  for (const std::string& node : gone) {
    const std::string message = "node " + node + " no longer exists: its finalizer on this volume was removed "
                                "(its directory there, if the node comes back, is left alone)";
    LogWarn("volume " + v.meta.name + ": " + message);
    recorder_->WarningOnce(pv, "NodeDeleted", message);
  }
  return Status::Ok();
}

// Runs `step` on the directory a.dir_name is in (the root, or a pathPattern's parent, made if
// `create`) and its last name, once the root is usable (and mounted, if required). A parent
// missing when not made: nothing to do (ok).
Status EveryNodeSteps::Dir(const Action& a, bool create, const std::function<Status(const Root&, const std::string&)>& step) {
  Result<Roots::Ref> root = roots_->Get(a.root);
  if (!root.ok()) return root.status().Wrap("cannot use " + a.root);
  if (a.require_mount)
    if (Status s = (*root)->FilesystemMounted(); !s.ok()) return s.Wrap("requireMount");
  std::string leaf;
  Result<Roots::Ref> parent = roots_->Place(a.root, a.dir_name, create, &leaf);
  if (!create && !parent.ok() && parent.status().code() == Status::kNotFound) return Status::Ok();
  if (!parent.ok()) return parent.status().Wrap("cannot open the directories above " + a.dir_name);
  return step(**parent, leaf);
}

Status EveryNodeSteps::Told(const Involved& pv, const char* reason, const std::string& message) {
  LogWarn("volume " + pv.name + ": " + message);
  recorder_->Warning(pv, reason, message);
  return Status::Error(message);
}
