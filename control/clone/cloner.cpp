// Clones, the copying: the bodies (cloner.hpp has the contracts).
#include "control/clone/cloner.hpp"

#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "base/log.hpp"
#include "base/text.hpp"
#include "control/usage.hpp"
#include "fs/btrfs_qgroup.hpp"
#include "fs/fsops.hpp"
#include "fs/quota.hpp"

namespace {

// The source volume's directory, opened without following a symlink, and on the root's
// filesystem (or a btrfs subvolume made there): a mount point is not copied.
Status OpenSource(const Root& root, const std::string& name, fsops_detail::Fd* out) {
  fsops_detail::Fd fd(openat(root.fd(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) return PosixError("open the source volume's directory " + root.path() + "/" + name, errno);
  fsops_detail::DirId root_id, id;
  if (int e = fsops_detail::GetDirId(root.fd(), &root_id); e != 0) return PosixError("stat " + root.path(), e);
  if (int e = fsops_detail::GetDirId(fd.get(), &id); e != 0) return PosixError("stat " + root.path() + "/" + name, e);
  if (!fsops_detail::SameMount(root_id, id) && !fsops_detail::IsSubvolumeIn(root_id, id, fd.get()))
    return Status::Invalid("the source volume's directory " + root.path() + "/" + name +
                           " is a mount point; refusing to copy what is mounted there");
  *out = std::move(fd);
  return Status::Ok();
}

// The subvolumes nested in the snapshot's source `src_fd`, named in *r (or counted, where
// the provisioner may not look up their names: without CAP_SYS_ADMIN).
void NameNested(int src_fd, CopyResult* r) {
  btrfs_ioctl_ino_lookup_args lookup {};
  lookup.objectid = BTRFS_FIRST_FREE_OBJECTID;
  std::vector<btrfs_qgroup::Nested> nested;
  if (ioctl(src_fd, BTRFS_IOC_INO_LOOKUP, &lookup) == 0 && btrfs_qgroup::ListNested(src_fd, lookup.treeid, &nested).ok()) {
    for (const auto& n : nested)
      if (r->skipped_subvolumes.size() < kCopyMountsNamed) r->skipped_subvolumes.push_back(n.path);
    r->skipped_subvolume_count = nested.size();
    return;
  }
  btrfs_qgroup::CountChildren(src_fd, &r->skipped_subvolume_count);
}

// A source that outgrew its size (made without a limit) makes a clone over its own limit when
// shared extents (a snapshot, reflinks) are not refused as written bytes are: writes in it
// would fail at once. Its accounting, once committed, says.
Status Fits(int dir_fd, const Root& dst, const QuotaId& q, int64_t size) {
  if (q.method == QuotaMethod::kNone) return Status::Ok();
  if (syncfs(dir_fd) != 0) return PosixError("flush the copy in " + dst.path(), errno);
  uint64_t used = 0, inodes = 0;
  QuotaLimits limits(dst);
  Status read = q.method == QuotaMethod::kBtrfs ? limits.QgroupUsage(q.id, &used)
                                                : limits.ProjectUsage(static_cast<unsigned>(q.id), &used, &inodes);
  if (!read.ok() || used <= static_cast<uint64_t>(size)) return Status::Ok();
  return Status(Status::kError, "the copy holds " + HumanBytes(used) + " and the clone's size is " +
                                    HumanBytes(static_cast<uint64_t>(size)), EDQUOT);
}

// How a copy between these two directories will most likely go, for the user (the Cloned event
// says how it went): with reflinks within one btrfs or XFS filesystem (XFS made without them
// copies bytes), else byte by byte.
std::string ExpectedCopy(int src_fd, int dst_fd) {
  struct statfs a {}, b {};
  if (fstatfs(src_fd, &a) != 0 || fstatfs(dst_fd, &b) != 0) return Describe(CopyMethod::kBytes);
  const unsigned long type = static_cast<unsigned long>(a.f_type);  // int on 32-bit ARM
  const bool same = a.f_type == b.f_type && std::memcmp(&a.f_fsid, &b.f_fsid, sizeof a.f_fsid) == 0;
  if (same && type == BTRFS_SUPER_MAGIC) return Describe(CopyMethod::kReflink);
  if (same && type == XFS_SUPER_MAGIC) return std::string(Describe(CopyMethod::kReflink)) + " where the filesystem has them";
  return Describe(CopyMethod::kBytes);
}

// Is `name` in dir_fd, not followed if a symlink, the directory `built` (same device and inode)?
bool StillBuilt(int dir_fd, const std::string& name, const struct stat& built) {
  struct stat now {};
  return fstatat(dir_fd, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(now.st_mode) && now.st_dev == built.st_dev &&
         now.st_ino == built.st_ino;
}

// The complete copy `temp` (the directory `built`) takes the volume's name (never over an
// existing one), marked as not yet named by a PV (CloneUnclaimedName) until Claimed. Nothing
// here waits on what another process put in `dst` (the mark opened non-blocking, and only a
// regular file taken), and the copy is checked, before and after the rename by name, to be the
// directory built: one swapped for a symlink or another directory is refused (kConflict).
Status Publish(const Root& dst, const std::string& temp, const std::string& name, const std::string& pv,
               const struct stat& built) {
  const std::string mark = CloneUnclaimedName(pv);
  fsops_detail::Fd fd(openat(dst.fd(), mark.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600));
  if (fd.get() < 0) return PosixError("make " + dst.path() + "/" + mark, errno);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return Status(Status::kConflict, dst.path() + "/" + mark + " is not a file the provisioner made; left as it is");
  const std::string swapped = " was replaced while it was copied (by someone who may write " + dst.path() + "); nothing published";
  if (!StillBuilt(dst.fd(), temp, built)) return Status(Status::kConflict, dst.path() + "/" + temp + swapped);
  if (renameat2(dst.fd(), temp.c_str(), dst.fd(), name.c_str(), RENAME_NOREPLACE) != 0) {
    const int e = errno;
    unlinkat(dst.fd(), mark.c_str(), 0);
    return PosixError("rename " + dst.path() + "/" + temp + " to " + name, e);
  }
  if (!StillBuilt(dst.fd(), name, built)) {
    unlinkat(dst.fd(), mark.c_str(), 0);  // unmarked: never taken for a copy of ours
    return Status(Status::kConflict, dst.path() + "/" + temp + swapped);
  }
  return Status::Ok();
}

Cloner::Finished& Failed(Cloner::Finished& f, Status s) {
  f.status = std::move(s);
  return f;
}

}  // namespace

Cloner::Cloner(Roots* roots, EventRecorder* recorder, Wake wake, Busy busy)
    : roots_(roots), recorder_(recorder), wake_(std::move(wake)), busy_(std::move(busy)) {}

Cloner::~Cloner() { Stop(); }

Cloner::State Cloner::Poll(const std::string& pv, Finished* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = finished_.find(pv); it != finished_.end()) {
    *out = std::move(it->second);
    finished_.erase(it);
    return State::kFinished;
  }
  if (current_ == pv) return State::kBusy;
  for (const Job& j : queue_)
    if (j.a.volume.meta.name == pv) return State::kBusy;
  return State::kNone;
}

bool Cloner::Has(const std::string& pv) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (current_ == pv || finished_.count(pv)) return true;
  for (const Job& j : queue_)
    if (j.a.volume.meta.name == pv) return true;
  return false;
}

void Cloner::Start(Job job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return;
  queue_.push_back(std::move(job));
  if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  cv_.notify_all();
}

void Cloner::Cancel(const std::string& claim_key) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = queue_.begin(); it != queue_.end();)
    it = it->claim_key == claim_key ? queue_.erase(it) : it + 1;
  if (current_claim_ == claim_key) cancel_ = true;
}

bool Cloner::Reading(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (current_source_ == name) return true;
  for (const Job& j : queue_)
    if (j.a.source.volume == name) return true;
  return false;
}

void Cloner::Halt() {
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = true;
  queue_.clear();
  cancel_ = true;
  cv_.notify_all();
}

void Cloner::Stop() {
  Halt();
  if (thread_.joinable()) thread_.join();
}

Status Cloner::RemoveTemp(const Root& root, const std::string& temp) {
  struct stat st {};
  if (fstatat(root.fd(), temp.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return Status::Ok();
  Result<QuotaId> q = QuotaLimits(root).Of(temp);
  return RemoveVolumeDir(root, temp, q.ok() ? *q : QuotaId{});
}

void Cloner::Claimed(const Root& root, const std::string& pv) { unlinkat(root.fd(), CloneUnclaimedName(pv).c_str(), 0); }

bool Cloner::Unclaimed(const Root& root, const std::string& pv) {
  struct stat st {};
  return fstatat(root.fd(), CloneUnclaimedName(pv).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

void Cloner::Yield() {
  const auto until = std::chrono::steady_clock::now() + kYieldAtMost;
  while (busy_ && busy_() && !cancel_ && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void Cloner::Run() {
  LowerThreadPriority("clone");
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Job job = std::move(queue_.front());
    queue_.pop_front();
    current_ = job.a.volume.meta.name;
    current_claim_ = job.claim_key;
    current_source_ = job.a.source.volume;
    cancel_ = false;
    lock.unlock();
    Finished f = Copy(job);
    lock.lock();
    current_.clear();
    current_claim_.clear();
    current_source_.clear();
    if (stopping_) return;
    const bool canceled = f.status.code() == Status::kCanceled;
    if (!canceled) finished_[job.a.volume.meta.name] = std::move(f);
    lock.unlock();
    if (!canceled) wake_("claim/" + job.claim_key);
    wake_("volume/" + job.a.source.volume);  // its removal may have waited for the copy
    lock.lock();
  }
}

Cloner::Finished Cloner::Copy(const Job& job) {
  const auto start = std::chrono::steady_clock::now();
  Finished f;
  const Action& a = job.a;
  const std::string temp = CloneTempName(a.volume.meta.name);
  Result<Roots::Ref> src_root = roots_->Get(a.source.root), dst_root = roots_->Get(a.root);
  if (!src_root.ok()) return Failed(f, src_root.status().Wrap("cannot use " + a.source.root));
  if (!dst_root.ok()) return Failed(f, dst_root.status().Wrap("cannot use " + a.root));
  for (const auto& [root, must] : {std::pair{&**src_root, a.source.require_mount}, std::pair{&**dst_root, a.require_mount}})
    if (Status s = must ? root->FilesystemMounted() : Status::Ok(); !s.ok()) return Failed(f, s.Wrap("requireMount"));
  // A pathPattern's directories ("ns/name") are opened in their parents.
  std::string src_leaf, dst_leaf;
  src_root = roots_->Place(a.source.root, a.source.dir_name, false, &src_leaf);
  dst_root = roots_->Place(a.root, a.dir_name, true, &dst_leaf);
  if (!src_root.ok()) return Failed(f, src_root.status().Wrap("cannot open the source's directory"));
  if (!dst_root.ok()) return Failed(f, dst_root.status().Wrap("cannot make the directories above " + a.dir_name));
  fsops_detail::Fd src;
  if (Status s = OpenSource(**src_root, src_leaf, &src); !s.ok()) return Failed(f, s);
  const Root& dst = **dst_root;
  if (Status s = RemoveTemp(dst, temp); !s.ok()) return Failed(f, s.Wrap("a copy cut short before is in the way"));
  Status s = Snapshot(src.get(), dst, temp, a, &f);
  const bool copy = s.code() == Status::kInvalid && f.result.method != CopyMethod::kSnapshot;
  recorder_->Normal(job.claim, reason::kCloning,
                    "copying " + a.source.claim + " (volume " + a.source.volume +
                        (job.source_bytes ? ", " + HumanBytes(job.source_bytes) + " in use" : "") + ") into " + a.root + "/" +
                        a.dir_name + " by " + (copy ? ExpectedCopy(src.get(), dst.fd()) : Describe(CopyMethod::kSnapshot)));
  if (copy) {
    LogDebug(1, "clone " + a.volume.meta.name + ": no snapshot (" + s.message() + "); copying");
    s = CopyInto(job, src.get(), dst, temp, &f);
  }
  struct stat built {};
  if (s.ok()) {
    fsops_detail::Fd made(openat(dst.fd(), temp.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    s = made.get() < 0 ? PosixError("open " + dst.path() + "/" + temp, errno) : Fits(made.get(), dst, f.made.quota, a.request_bytes);
    if (s.ok() && fstat(made.get(), &built) != 0) s = PosixError("stat " + dst.path() + "/" + temp, errno);
  }
  if (s.ok()) s = Publish(dst, temp, dst_leaf, a.volume.meta.name, built);
  f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!s.ok()) {
    LogDebug(1, "clone " + a.volume.meta.name + ": " + s.message());
    if (!stopping_) {
      if (Status r = RemoveVolumeDir(dst, temp, f.made.quota); !r.ok()) LogWarn("clone " + a.volume.meta.name + ": " + r.message());
    }
    if (s.code() != Status::kCanceled) stats_.failed++;
    return Failed(f, s);
  }
  stats_.by_method[static_cast<int>(f.result.method)]++;
  stats_.millis += static_cast<uint64_t>(f.seconds * 1000);
  Report(job, f);
  return f;
}

// A btrfs subvolume source, into a root on the same btrfs: a snapshot, then its limit, set
// explicitly (btrfs copies the source's onto it): the clone's own size where its class
// enforces one, else none. Subvolumes nested in the source are empty directories in a
// snapshot: they are named in f->result (CloneSkipped). kInvalid (f->result.method not
// kSnapshot) when a snapshot cannot be made, or its copied limit cannot be cleared: then it
// is copied.
Status Cloner::Snapshot(int src_fd, const Root& dst, const std::string& temp, const Action& a, Finished* f) {
  QuotaSupport support;
  if (a.quota != "false") {
    support = ProbeQuota(dst);
    if (support.method == QuotaMethod::kNone && a.quota == "true")
      return Status::Error("the size cannot be enforced (class parameter quota: \"true\"): " + support.why_not);
    if (support.method == QuotaMethod::kProject) return Status::Invalid("not on btrfs");
    if (support.method == QuotaMethod::kNone) f->made.not_enforced = support.why_not;
  }
  if (Status s = SnapshotSubvolume(src_fd, dst.fd(), temp); !s.ok()) return s;
  f->result.method = CopyMethod::kSnapshot;
  NameNested(src_fd, &f->result);
  QuotaLimits limits(dst);
  Result<QuotaId> q = limits.Of(temp);
  if (!q.ok()) return q.status();
  if (support.method != QuotaMethod::kBtrfs) {
    Status cleared = limits.ClearLimit(*q, temp);
    if (cleared.ok()) return cleared;
    f->result = CopyResult{};  // copied instead, into a plain directory
    if (Status r = RemoveTemp(dst, temp); !r.ok()) return r;
    return Status::Invalid(cleared.message());
  }
  f->made.quota = *q;
  return limits.LimitNew(*q, temp, static_cast<uint64_t>(a.request_bytes));
}

// Any other source: the clone's directory is made as any volume's (with its limit), and the
// tree copied into it, with reflinks where the filesystem can.
Status Cloner::CopyInto(const Job& job, int src_fd, const Root& dst, const std::string& temp, Finished* f) {
  Action made_as = job.a;
  made_as.dir_name = temp;
  Result<MadeDir> made = MakeVolumeDir(dst, made_as);
  if (!made.ok()) return made.status();
  f->made = *made;
  fsops_detail::Fd dst_fd(openat(dst.fd(), temp.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dst_fd.get() < 0) return PosixError("open " + dst.path() + "/" + temp, errno);
  auto last = std::chrono::steady_clock::now();
  const auto start = last;
  uint64_t counted = 0;
  CopyOptions opt;
  opt.cancel = &cancel_;
  opt.progress_entries = kYieldEntries;
  opt.progress_bytes = kYieldBytes;
  opt.progress = [&](const CopyProgress& p) {
    Yield();
    stats_.bytes += p.bytes - counted;
    counted = p.bytes;
    const auto now = std::chrono::steady_clock::now();
    if (now - last < kProgressEvery) return;
    last = now;
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.0f s", std::chrono::duration<double>(now - start).count());
    recorder_->Normal(job.claim, reason::kCloneProgress,
                      "copying " + job.a.source.claim + ": " + HumanBytes(p.bytes) +
                          (job.source_bytes ? " of about " + HumanBytes(job.source_bytes) : "") + ", " +
                          std::to_string(p.entries) + " entries so far, in " + secs);
  };
  Result<CopyResult> copied = CopyContents(src_fd, dst_fd.get(), opt);
  if (!copied.ok()) return copied.status();
  stats_.bytes += copied->bytes - counted;
  f->result = *copied;
  if (syncfs(dst_fd.get()) != 0) return PosixError("flush the copy in " + dst.path(), errno);  // before its rename
  return Status::Ok();
}

void Cloner::Report(const Job& job, const Finished& f) {
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.1f s", f.seconds);
  const CopyResult& r = f.result;
  const std::string what = r.method == CopyMethod::kSnapshot
                               ? std::string("a btrfs snapshot")
                               : HumanBytes(r.bytes) + " and " + std::to_string(r.entries) + " entries by " + Describe(r.method);
  LogInfo("cloned " + job.a.source.claim + " into " + job.a.volume.meta.name + ": " + what + " in " + secs);
  recorder_->Normal(job.claim, reason::kCloned, "copied " + job.a.source.claim + " into " + job.a.volume.meta.name + ": " +
                                                    what + ", in " + secs);
  if (r.skipped_special == 0 && r.skipped_mount_count == 0 && r.skipped_subvolume_count == 0) return;
  auto count = [](uint64_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); };
  auto names = [](const std::vector<std::string>& named, uint64_t all) {
    std::string list;
    for (size_t i = 0; i < named.size(); ++i) list += (i ? ", " : "") + named[i];
    return all > named.size() && !named.empty() ? list + ", ..." : list;
  };
  std::vector<std::string> parts;
  if (r.skipped_special)
    parts.push_back(count(r.skipped_special, "socket, FIFO or device node", "sockets, FIFOs or device nodes") +
                    " (a copy cannot hold them)");
  if (r.skipped_mount_count)
    parts.push_back(count(r.skipped_mount_count, "mount point", "mount points") + " inside it, whose contents are another filesystem's (" +
                    names(r.skipped_mounts, r.skipped_mount_count) + ")");
  if (r.skipped_subvolume_count)
    parts.push_back(count(r.skipped_subvolume_count, "btrfs subvolume", "btrfs subvolumes") + " made inside it, whose contents are " +
                    "not in the clone (" + (r.method == CopyMethod::kSnapshot ? "each is an empty directory there" : "left out") +
                    (r.skipped_subvolumes.empty() ? "" : ": " + names(r.skipped_subvolumes, r.skipped_subvolume_count)) +
                    "): copy them in by hand if the clone needs them");
  std::string message = "not copied from " + job.a.source.claim + ":";
  for (size_t i = 0; i < parts.size(); ++i) message += (i ? "; " : " ") + parts[i];
  recorder_->Warning(job.claim, reason::kCloneSkipped, message);
}
