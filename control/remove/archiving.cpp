// Archiving a volume's directory: the bodies (archiving.hpp has the contracts).
#include "control/remove/archiving.hpp"

#include <chrono>
#include <vector>

#include "base/quantity.hpp"
#include "decide/archive_name.hpp"
#include "fs/archive_dir.hpp"

int64_t ArchiveSeconds(const std::string& archive_for, std::string* note) {
  note->clear();
  Result<int64_t> keep = DurationSeconds(archive_for.empty() ? "0" : archive_for);
  if (keep.ok()) return *keep;
  *note = " (annotation " + std::string(ann::kArchiveFor) + " unreadable: " + keep.status().message() + "; kept for ever)";
  return 0;
}

int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Why clearing the limit is safe. Project quotas: the archived files stay charged to the ID, and
// AssignProject takes only an ID that nothing is charged to and that has no limits, so the ID is
// not handed to another volume while the archive exists; once the archive is removed (expiry),
// the ID is free. Nobody writes into an archive (its PV is gone; .archive is 0700), so no limit
// is needed to hold its size. btrfs: the subvolume keeps its ID and its qgroups, unlimited; they
// are destroyed when the archive is removed (RemoveArchive), the ID read from the subvolume.
// Cleared before the move: a crash between the two leaves the directory in place, unlimited, and
// the next attempt finds the same ID (the directory's and the PV's still agree) and moves it.
Result<std::string> ArchiveVolumeDir(const Root& root, const Root& parent, const std::string& leaf,
                                     const std::string& dir_name, const QuotaId& recorded, int64_t now,
                                     int64_t keep_seconds) {
  Result<Root> archive = OpenArchiveFolder(root, true);
  if (!archive.ok()) return archive.status().Wrap("cannot use the archive folder");
  // Gone, or not a directory: MoveIntoArchive says so.
  if (recorded.method != QuotaMethod::kNone && fsops_detail::IsDirNoFollow(parent.fd(), leaf)) {
    QuotaLimits limits(parent);
    Result<QuotaId> q = AgreedQuota(limits, leaf, recorded);
    if (q.ok()) {
      if (Status s = limits.Unlimit(*q, leaf, limits.NestedIds(*q)); !s.ok()) return s.Wrap("cannot clear the limit before archiving");
    } else if (q.status().code() != Status::kConflict) {
      return q.status();
    }  // they disagree: no limit is touched, the ID stays limited and is never handed out again
  }
  return MoveIntoArchive(parent, leaf, *archive, [&](int counter) { return ArchiveName(dir_name, now, keep_seconds, counter); });
}

std::string ArchivedMessage(const std::string& root_path, const std::string& dir_name, const std::string& name,
                            int64_t now, int64_t keep_seconds) {
  return "moved " + root_path + "/" + dir_name + " to " + fsops_detail::Join(root_path, kArchiveFolder) + "/" + name + "; " +
         (keep_seconds > 0 ? "it is removed after " + ArchiveTime(now + keep_seconds) + " (UTC)"
                           : "it is kept until removed by hand");
}

std::string ArchivedBefore(const Root& root, const std::string& dir_name) {
  const std::string folder = fsops_detail::Join(root.path(), kArchiveFolder);
  const std::string prefix = ArchivePrefix(dir_name);
  Result<Root> archive = OpenArchiveFolder(root, false);
  std::vector<std::string> found;
  if (archive.ok())
    for (std::string& name : ArchivesStartingWith(*archive, prefix))
      if (ArchiveOf(name, dir_name)) found.push_back(std::move(name));  // not "ns/a--b"'s for "ns/a"
  std::string text = root.path() + "/" + dir_name + " was already gone: ";
  if (!archive.ok() && archive.status().code() != Status::kNotFound)
    return text + "cannot look for its archive: " + archive.status().message();
  if (found.empty()) return text + "no archive of it is in " + folder + " (" + prefix + "..., removed by hand?)";
  text += "archived by an earlier attempt, as " + folder + "/" + found.back();
  if (found.size() > 1) text += " (" + std::to_string(found.size()) + " archives of it are in " + folder + ")";
  return text;
}

Status RemoveArchive(const Root& archive, const std::string& name, const std::atomic<bool>* cancel) {
  Result<QuotaId> q = QuotaLimits(archive).Of(name);
  const QuotaId btrfs = q.ok() && q->method == QuotaMethod::kBtrfs ? *q : QuotaId{};
  return RemoveVolumeDir(archive, name, btrfs, cancel);
}
