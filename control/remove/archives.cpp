// The archive pass: the bodies (archives.hpp has the contract).
#include "control/remove/archives.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include <optional>
#include <utility>

#include "base/log.hpp"
#include "base/text.hpp"
#include "control/remove/archiving.hpp"
#include "decide/archive_name.hpp"
#include "fs/archive_dir.hpp"
#include "fs/usage_walk.hpp"

ArchivePass::ArchivePass(Roots* roots, std::vector<std::string> root_paths, MayAct may_act,
                         const std::atomic<bool>* cancel)
    : roots_(roots), root_paths_(std::move(root_paths)), may_act_(std::move(may_act)), cancel_(cancel) {}

namespace {

// Seconds since boot, suspended time included: no setting of the wall clock moves it.
int64_t BootSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec);
}

// "168h0m0s", as archiveFor is written.
std::string Duration(int64_t s) {
  if (s < 0) s = 0;
  return std::to_string(s / 3600) + "h" + std::to_string(s / 60 % 60) + "m" + std::to_string(s % 60) + "s";
}

}  // namespace

void ArchivePass::Run(int64_t now) {
  std::lock_guard<std::mutex> one(run_mu_);
  const int64_t boot = BootSeconds();
  std::map<std::string, ArchiveFigures> figures;
  std::map<std::string, Watch> watched;
  for (const std::string& path : root_paths_) {
    Result<Roots::Ref> root = roots_->Get(path);
    if (!root.ok()) {
      LogDebug(1, "archives: " + root.status().message());
      continue;
    }
    ArchiveFigures f = PassOver(**root, now, boot, &watched);
    if (f.count > 0) figures[path] = f;
  }
  // An archive not seen in this pass (removed, moved away, or its root not opened) is watched
  // from the start again if it comes back.
  watched_ = std::move(watched);
  std::lock_guard<std::mutex> lock(mu_);
  figures_ = std::move(figures);
}

ArchiveFigures ArchivePass::PassOver(const Root& root, int64_t now, int64_t boot, std::map<std::string, Watch>* watched) {
  ArchiveFigures f;
  f.root = root.path();
  Result<Root> archive = OpenArchiveFolder(root, false);
  if (!archive.ok()) {
    // Refused (not root's, a symlink, ...): nothing in it is expired, counted or measured.
    // Said once per reason, not at every pass.
    if (archive.status().code() != Status::kNotFound) {
      const std::string why = "archives: " + archive.status().message() + "; no archive in it is removed until then";
      std::lock_guard<std::mutex> lock(mu_);
      if (reported_.insert(why).second) LogWarn(why);
    }
    return f;
  }
  Result<std::vector<std::string>> names = archive->ListDirs();
  if (!names.ok()) {
    LogWarn("archives: " + names.status().message());
    return f;
  }
  for (const std::string& name : *names) {
    const std::string path = archive->path() + "/" + name;
    std::optional<ArchiveNameParts> parts = ParseArchiveName(name);
    // Watched since this process first saw this very directory (another one moved in under the
    // same name is watched afresh).
    struct stat st {};
    const bool stated = fstatat(archive->fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    Watch w{st.st_dev, st.st_ino, boot, false};
    auto before = watched_.find(path);
    if (stated && before != watched_.end() && before->second.dev == w.dev && before->second.ino == w.ino) w = before->second;
    if (stated) (*watched)[path] = w;
    const int64_t seen_for = stated ? boot - w.since : 0;
    if (!parts) {
      std::lock_guard<std::mutex> lock(mu_);
      if (reported_.insert(path).second)
        LogWarn("archives: " + path + " is not named as this provisioner names archives; left alone (never removed)");
    } else if (ArchiveExpired(*parts, now) && !ArchiveDue(*parts, now, seen_for)) {
      if (stated && !w.told) {
        (*watched)[path].told = true;
        const int64_t keep = parts->expires_at - parts->archived_at;
        LogInfo("archives: " + path + ": its time has come by this node's clock, but it goes only once this provisioner has "
                "seen it for as long as it is kept (" + Duration(keep) + "), around " + ArchiveTime(now + keep - seen_for) +
                " (UTC): the clock that named it may have been wrong");
      }
    } else if (ArchiveDue(*parts, now, seen_for) && may_act_()) {
      Status s = RemoveArchive(*archive, name, cancel_);
      if (s.ok()) {
        LogInfo("removed archive " + path + ": archived " + ArchiveTime(parts->archived_at) + ", kept until " +
                ArchiveTime(parts->expires_at) + " (UTC)");
        std::lock_guard<std::mutex> lock(mu_);
        measured_.erase(path);
        continue;
      }
      if (s.code() == Status::kCanceled) return f;
      LogWarn("archives: cannot remove " + path + " (its time has come): " + s.message() + "; tried again on the next pass");
    }
    f.count++;
    uint64_t bytes = 0;
    if (Measure(*archive, name, &bytes)) f.bytes += bytes;
    else f.unmeasured++;
  }
  return f;
}

// The bytes of archive/name: measured once (an archive does not change), then remembered.
bool ArchivePass::Measure(const Root& archive, const std::string& name, uint64_t* bytes) {
  const std::string path = archive.path() + "/" + name;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = measured_.find(path);
    if (it != measured_.end()) {
      *bytes = it->second;
      return true;
    }
  }
  Result<UsageWalk> walk = UsageWalk::Begin(archive, name);
  if (!walk.ok()) {
    LogDebug(1, "archives: cannot measure " + path + ": " + walk.status().message());
    return false;
  }
  while (!walk->Step(4096))
    if (cancel_ != nullptr && *cancel_) return false;
  *bytes = walk->count().bytes;
  std::lock_guard<std::mutex> lock(mu_);
  measured_[path] = *bytes;
  return true;
}

std::vector<ArchiveFigures> ArchivePass::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ArchiveFigures> out;
  for (const auto& [path, f] : figures_) out.push_back(f);
  return out;
}

ArchiveFigures ArchivePass::Now(const std::string& path) {
  ArchiveFigures f;
  f.root = path;
  Result<Roots::Ref> root = roots_->Get(path);
  if (!root.ok()) return f;
  Result<Root> archive = OpenArchiveFolder(**root, false);
  if (!archive.ok()) return f;
  Result<std::vector<std::string>> names = archive->ListDirs();
  if (!names.ok()) return f;
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& name : *names) {
    f.count++;
    auto it = measured_.find(archive->path() + "/" + name);
    if (it == measured_.end()) f.unmeasured++;
    else f.bytes += it->second;
  }
  return f;
}

std::string ArchivesNote(const ArchiveFigures& f) {
  if (f.count == 0) return "";
  std::string size = f.unmeasured == f.count ? "not measured yet"
                     : (f.unmeasured > 0 ? "at least " : "") + HumanBytes(f.bytes);
  return "; " + f.root + "/" + kArchiveFolder + " holds " + std::to_string(f.count) + (f.count == 1 ? " archive" : " archives") +
         " (" + size + ") of released volumes (class parameter onDelete: \"archive\"): remove those no longer needed by "
         "hand, or give the class a shorter archiveFor";
}
