// The key of a volume: the bodies (deleter.hpp has the contracts).
#include "control/remove/deleter.hpp"

#include <cstdio>
#include <optional>
#include <vector>

#include "base/log.hpp"
#include "base/paths.hpp"
#include "base/text.hpp"
#include "control/remove/archiving.hpp"
#include "control/make/volume_dir.hpp"
#include "decide/path_pattern.hpp"
#include "fs/fsops.hpp"

Deleter::Deleter(const Config& cfg, const Informer<Volume>* volumes, const DirGuard* guard, const Informer<StorageClass>* classes, Roots* roots,
                 EveryNodeSteps* every_node, SharedSteps* shared, EventRecorder* recorder, ControllerStats* stats,
                 BeingCopied being_copied, const std::atomic<bool>* cancel, RootMovedCheck root_moved)
    : cfg_(cfg), volumes_(volumes), guard_(guard), classes_(classes), roots_(roots), every_node_(every_node), shared_(shared),
      recorder_(recorder), stats_(stats), being_copied_(std::move(being_copied)), cancel_(cancel),
      root_moved_(std::move(root_moved)) {}

Outcome Deleter::Sync(WorkerApi& w, const std::string& name) {
  std::optional<Volume> v = volumes_->Get(name);
  if (!v) {
    deleted_.Erase(name);
    return Outcome::Done();
  }
  if (deleted_.Contains(name)) return Outcome::Done();  // deleted it; the watch has not caught up yet
  std::optional<StorageClass> sc;
  if (OnAllNodes(*v) && !v->storage_class_name.empty()) sc = classes_->Get(v->storage_class_name);
  Action a = DecideVolume(cfg_, *v, sc ? &*sc : nullptr);
  if (a.kind != Action::kNothing && root_moved_("volume/" + name)) return Outcome::Retry();
  switch (a.kind) {
    case Action::kNothing:
      LogDebug(2, "volume " + name + ": nothing to do: " + a.why);
      return Outcome::Done();
    case Action::kFail:
      stats_->delete_failed++;
      LogWarn("volume " + name + ": " + a.message);
      recorder_->Warning(InvolvedOf(*v), a.reason, a.message);
      return Outcome::Retry();
    case Action::kDropFinalizer:
      return DropFinalizer(w, *v);
    case Action::kDelete:
      return Delete(w, *v, a);
    case Action::kJoin:
      return every_node_->Join(w.api, *v, a, InvolvedOf(*v)).ok() ? Outcome::Done() : Outcome::Retry(w.conn.last_retry_after());
    case Action::kLeave:
      return every_node_->Leave(w.api, *v, a, InvolvedOf(*v)).ok() ? Outcome::Done() : Outcome::Retry(w.conn.last_retry_after());
    case Action::kDeleteObject: {
      Status s = w.api.DeleteVolume(v->meta.name, v->meta.uid);
      if (s.ok()) LogInfo("volume " + name + ": released; deleting it (each node then removes its directory)");
      if (!s.ok()) LogWarn("volume " + name + ": " + s.message());
      return s.ok() ? Outcome::Done() : Outcome::Retry(w.conn.last_retry_after());
    }
    case Action::kAdopt: {
      bool taken = false;
      Status s = shared_->Adopt(w.api, *v, a.holder, InvolvedOf(*v), &taken);
      // Its node still exists: its instance acts; looked at again later (the node may go).
      return s.ok() && taken ? Outcome::Done() : Outcome::Retry(w.conn.last_retry_after());
    }
    case Action::kPruneGone: {
      bool others_left = false;
      Status s = every_node_->PruneGone(w.api, *v, InvolvedOf(*v), &others_left);
      // Nodes that still exist have yet to leave: look again later (a node may go meanwhile).
      return s.ok() && !others_left ? Outcome::Done() : Outcome::Retry(w.conn.last_retry_after());
    }
    default:
      return Outcome::Done();
  }
}

// Removes our finalizer, so that a PV being deleted can go. A conflict means a newer version
// is on its way through the watch (retry then); a PV already gone is done.
Outcome Deleter::DropFinalizer(WorkerApi& w, const Volume& v) {
  std::vector<std::string> rest;
  for (const auto& f : v.meta.finalizers)
    if (f != ann::kProvisionerFinalizer) rest.push_back(f);
  Status s = w.api.SetVolumeFinalizers(v, rest);
  if (s.ok() || s.code() == Status::kNotFound) return Outcome::Done();
  if (s.code() != Status::kConflict) LogWarn(s.message());
  return Outcome::Retry(w.conn.last_retry_after());
}

// Removes (or archives, or keeps: a.on_delete) the directory, then drops our finalizer and
// deletes the PV (its uid checked).
Outcome Deleter::Delete(WorkerApi& w, const Volume& v, const Action& a) {
  if (being_copied_ && being_copied_(v.meta.name)) {  // the copy wakes it when it ends
    LogInfo("volume " + v.meta.name + ": removed once the clone copying it ends");
    return Outcome::Retry();
  }
  auto start = std::chrono::steady_clock::now();
  std::string path = a.root + "/" + a.dir_name;
  if (a.on_delete != "delete" && a.on_delete != "archive" && a.on_delete != "retain")
    return DeleteFailed(v, "annotation " + std::string(ann::kOnDelete) + "=\"" + a.on_delete +
                               "\" is not \"archive\" or \"retain\" (or absent: delete); refusing to touch " + path +
                               ". Set it right on the PersistentVolume");
  if (a.on_delete == "retain") {
    if (Outcome o = DropVolume(w, v, "directory kept"); o.retry) return o;
    const std::string message = "the PersistentVolume is gone; its data stays in " + path + " on " +
                                Or(cfg_.node_name, "the provisioner's host") + " (class parameter onDelete: \"retain\"): "
                                "remove it by hand when it is no longer needed";
    LogInfo("volume " + v.meta.name + ": " + message);
    recorder_->Normal(InvolvedOf(v), reason::kVolumeRetained, message);
    return Deleted(v, "kept " + path, start);
  }
  if (std::optional<Volume> other = guard_->Overlapping(path, v.meta.name))
    return DeleteFailed(v, DirGuard::Uses(*other, path) + ": refusing to " + (a.on_delete == "archive" ? "archive " : "delete ") +
                               path + ", which would take that volume's data (delete that volume first, or move the data by hand)");
  Result<Roots::Ref> root = roots_->Get(a.root);
  if (!root.ok()) return DeleteFailed(v, "cannot use " + a.root + ": " + root.status().message() + "; will retry");
  if (a.require_mount) {
    if (Status s = (*root)->FilesystemMounted(); !s.ok())
      return DeleteFailed(v, "requireMount: " + s.message() + "; nothing removed until it is (will retry)");
  }
  auto recorded = v.meta.annotations.find(ann::kQuota);
  const QuotaId quota = recorded == v.meta.annotations.end() ? QuotaId{} : ParseQuotaId(recorded->second);
  std::string leaf;
  Result<Roots::Ref> parent = roots_->Place(a.root, a.dir_name, false, &leaf);
  // A pathPattern's parent gone: so is the directory (removed by an earlier attempt, or by hand).
  const bool parent_gone = !parent.ok() && parent.status().code() == Status::kNotFound;
  if (!parent.ok() && !parent_gone)
    return DeleteFailed(v, "cannot open the directory above " + path + ": " + parent.status().message() + "; will retry");
  if (a.on_delete == "archive") {
    std::optional<Outcome> failed = Archive(v, a, **root, parent_gone ? nullptr : &**parent, leaf, quota);
    if (failed) return *failed;
  } else if (Status s = parent_gone ? Status::Ok() : RemoveVolumeDir(**parent, leaf, quota, cancel_); !s.ok()) {
    if (s.code() == Status::kCanceled) {
      LogInfo("volume " + v.meta.name + ": stopping: " + s.message() + " for whoever acts next");
      return Outcome::Retry();
    }
    const std::string hint = FixHint(s);
    return DeleteFailed(v, "removing " + path + " failed: " + s.message() + (hint.empty() ? "" : "; " + hint) + "; will retry");
  }
  if (a.path_pattern) roots_->RemoveEmptyParents(a.root, a.dir_name);
  if (Outcome o = DropVolume(w, v, a.on_delete == "archive" ? "directory archived" : "directory removed"); o.retry) return o;
  return Deleted(v, (a.on_delete == "archive" ? "archived " : "removed ") + path, start);
}

// Drops our finalizer and deletes the PV (its uid checked), once its directory is seen to.
Outcome Deleter::DropVolume(WorkerApi& w, const Volume& v, const std::string& done) {
  if (HasFinalizer(v.meta, ann::kProvisionerFinalizer)) {
    if (Outcome o = DropFinalizer(w, v); o.retry) return o;
  }
  if (!v.meta.deleting) {
    if (Status s = w.api.DeleteVolume(v.meta.name, v.meta.uid); !s.ok()) {
      stats_->delete_failed++;
      LogWarn("volume " + v.meta.name + ": " + done + ", but " + s.message());
      return Outcome::Retry(w.conn.last_retry_after());
    }
  }
  return Outcome::Done();
}

// Moves the directory (in `parent`; none when its parent is gone) into root/.archive and says
// where (a VolumeArchived event); a directory gone already was archived by an earlier attempt
// (a crash between the move and the PV's delete): the event names the archives of that name.
// Nothing when done; else the outcome (told).
std::optional<Outcome> Deleter::Archive(const Volume& v, const Action& a, const Root& root, const Root* parent,
                                        const std::string& leaf, const QuotaId& quota) {
  std::string note;
  const int64_t keep_seconds = ArchiveSeconds(a.archive_for, &note);
  const int64_t now = NowSeconds();
  Result<std::string> moved = parent == nullptr ? Result<std::string>(Status::NotFound(a.dir_name))
                                                : ArchiveVolumeDir(root, *parent, leaf, a.dir_name, quota, now, keep_seconds);
  if (!moved.ok() && moved.status().code() != Status::kNotFound) {
    const std::string hint = FixHint(moved.status());
    return DeleteFailed(v, "archiving " + a.root + "/" + a.dir_name + " failed: " + moved.status().message() +
                               (hint.empty() ? "" : "; " + hint) + "; nothing moved, will retry");
  }
  const std::string message =
      moved.ok() ? ArchivedMessage(a.root, a.dir_name, *moved, now, keep_seconds) + note : ArchivedBefore(root, a.dir_name);
  LogInfo("volume " + v.meta.name + ": " + message);
  recorder_->Normal(InvolvedOf(v), reason::kVolumeArchived, message);
  return std::nullopt;
}

Outcome Deleter::DeleteFailed(const Volume& v, const std::string& message) {
  stats_->delete_failed++;
  LogWarn("volume " + v.meta.name + ": " + message);
  recorder_->Warning(InvolvedOf(v), reason::kVolumeFailedDelete, message);
  return Outcome::Retry();
}

Outcome Deleter::Deleted(const Volume& v, const std::string& done, std::chrono::steady_clock::time_point start) {
  deleted_.Insert(v.meta.name);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats_->deleted++;
  stats_->delete_seconds.Observe(secs);
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.1f ms", secs * 1000);
  LogInfo("deleted volume " + v.meta.name + " of " + v.claim_ref.namespace_ + "/" + v.claim_ref.name + " (" + done + ", " + ms + ")");
  return Outcome::Done();
}
