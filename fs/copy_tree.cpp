// The body of copy_tree.hpp's CopyContents: the walk that copies a volume directory, by the rules at
// the top of copy_tree.hpp. (SnapshotSubvolume is in btrfs_snapshot.cpp.)
#include "fs/copy_tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <utility>

#include "fs/file_copy.hpp"
#include "fs/fsops.hpp"

const char* Describe(CopyMethod m) {
  switch (m) {
    case CopyMethod::kReflink: return "reflink copy";
    case CopyMethod::kSnapshot: return "btrfs snapshot";
    case CopyMethod::kBytes: break;
  }
  return "byte copy";
}

namespace {
namespace copy_detail {

using fsops_detail::Fd;

class TreeCopier {
 public:
  TreeCopier(int src_fd, int dst_fd, const CopyOptions& opt) : src_root_(src_fd), dst_root_(dst_fd), opt_(opt) {
    data_.cancel = opt.cancel;
    data_.on_bytes = [this](uint64_t n) {
      result_.bytes += n;
      Tick();
    };
  }

  Result<CopyResult> Run() {
    struct statx sx;
    if (statx(src_root_, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, kMask, &sx) != 0) return PosixError("stat the source", errno);
    if (!S_ISDIR(sx.stx_mode)) return Status::Invalid("the source is not a directory");
    src_id_ = fsops_detail::DirIdOf(sx);
    // Descriptors of our own: reading a directory moves its descriptor's position, which the
    // caller's must keep.
    Fd src(fsops_detail::OpenDirNoFollow(src_root_, "."));
    if (src.get() < 0) return PosixError("open the source", errno);
    Fd dst(openat(dst_root_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dst.get() < 0) return PosixError("open the destination", errno);
    if (int err = fsops_detail::GetDirId(dst.get(), &dst_id_)) return PosixError("stat the destination", err);
    frames_.push_back(Frame{"", src_id_.ino, dst_id_.ino, std::move(src), std::move(dst), file_copy::MetaOf(sx)});
    open_.push_back(0);
    buf_ = std::make_unique<char[]>(kBufBytes);

    while (!frames_.empty()) {
      if (Canceled()) return Status(Status::kCanceled, "copy stopped before the end (canceled) at " + Shown(""));
      if (open_.back() != frames_.size() - 1) {
        if (Status s = Reopen(); !s.ok()) return s;
      }
      if (pos_ >= len_) {
        Result<bool> more = Fill();
        if (!more.ok()) return more.status();
        if (!*more) {
          if (Status s = Finish(); !s.ok()) return s;
          continue;
        }
      }
      const auto* d = reinterpret_cast<const dirent64*>(buf_.get() + pos_);
      pos_ += d->d_reclen;
      frames_.back().cookie = d->d_off;
      const char* n = d->d_name;
      if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'))) continue;
      if (Status s = Visit(n); !s.ok()) return s;
    }
    result_.method = reflinked_ && !byte_copied_ ? CopyMethod::kReflink : CopyMethod::kBytes;
    return result_;
  }

 private:
  static constexpr size_t kBufBytes = 32 * 1024;
  static constexpr unsigned kMask = STATX_BASIC_STATS | STATX_MNT_ID;

  // A directory being copied, and its copy. As in usage_walk: only the top frame reads, into
  // the one buffer; a frame below resumes after `cookie`; closed ones are opened again by name
  // (which ones stay open: Trim).
  struct Frame {
    std::string name;  // in the frame below (frame 0: "")
    ino_t src_ino = 0, dst_ino = 0;
    Fd src, dst;  // both -1 while closed (too many open)
    file_copy::Meta meta;  // set on the copy once its contents are in (times, and a default ACL
                           // that must not reach the entries made inside)
    off_t cookie = 0;
    bool seek = false;
  };

  // The first copy of an inode with several links, to link its other names to.
  struct Linked {
    ino_t dst_ino = 0;
    std::string path;  // relative to the destination
  };

  bool Canceled() const { return opt_.cancel != nullptr && opt_.cancel->load(std::memory_order_relaxed); }

  // `name` in the top frame, relative to the source ("." for the source itself).
  std::string Rel(const std::string& name) const {
    std::string rel = PathTo(frames_.size() - 1);
    if (!name.empty()) rel += (rel.empty() ? "" : "/") + name;
    return rel.empty() ? "." : rel;
  }
  std::string Shown(const std::string& name) const { return fsops_detail::Printable(Rel(name)); }
  Status Fail(const std::string& what, const std::string& name, int err) const {
    if (err == ECANCELED) return Status(Status::kCanceled, "copy stopped before the end (canceled) at " + Shown(name));
    return PosixError(what + " " + Shown(name), err);
  }

  void Tick() {
    if (!opt_.progress) return;
    if (result_.entries - told_.entries < opt_.progress_entries && result_.bytes - told_.bytes < opt_.progress_bytes) return;
    told_ = CopyProgress{result_.bytes, result_.entries};
    opt_.progress(told_);
  }

  Result<bool> Fill() {
    Frame& top = frames_.back();
    if (top.seek) {
      if (lseek(top.src.get(), top.cookie, SEEK_SET) < 0) return Fail("list", "", errno);
      top.seek = false;
    }
    ssize_t n = getdents64(top.src.get(), buf_.get(), kBufBytes);
    if (n < 0) return Fail("list", "", errno);
    pos_ = 0;
    len_ = static_cast<size_t>(n);
    return n > 0;
  }

  // Copies the entry `name` of the top frame; a directory becomes the new top frame.
  Status Visit(const char* name) {
    Frame& top = frames_.back();
    struct statx sx;
    if (statx(top.src.get(), name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, kMask, &sx) != 0) {
      if (errno == ENOENT) return Vanished();
      return Fail("stat", name, errno);
    }
    const fsops_detail::DirId id = fsops_detail::DirIdOf(sx);
    if (!fsops_detail::SameMount(id, src_id_)) return fsops_detail::OnMountOf(id, src_id_) ? SkipSubvolume(name) : SkipMount(name);
    Status s;
    switch (sx.stx_mode & S_IFMT) {
      case S_IFDIR: s = EnterDir(name, sx); break;
      case S_IFREG: s = CopyFile(name, sx); break;
      case S_IFLNK: s = CopyLink(name, sx); break;
      default: ++result_.skipped_special; break;
    }
    Tick();
    return s;
  }

  Status Vanished() {
    ++result_.vanished;
    return Status::Ok();
  }

  Status SkipMount(const std::string& name) {
    if (result_.skipped_mounts.size() < kCopyMountsNamed) result_.skipped_mounts.push_back(Rel(name));
    ++result_.skipped_mount_count;
    return Status::Ok();
  }

  Status SkipSubvolume(const std::string& name) {
    if (result_.skipped_subvolumes.size() < kCopyMountsNamed) result_.skipped_subvolumes.push_back(Rel(name));
    ++result_.skipped_subvolume_count;
    return Status::Ok();
  }

  // Is the open directory fd the directory `ino` on the source's mount?
  bool SameSrc(int fd, ino_t ino) const {
    fsops_detail::DirId got;
    return fsops_detail::GetDirId(fd, &got) == 0 && got.ino == ino && fsops_detail::SameMount(got, src_id_);
  }
  bool SameDst(int fd, ino_t ino) const {
    fsops_detail::DirId got;
    return fsops_detail::GetDirId(fd, &got) == 0 && got.ino == ino && got.dev == dst_id_.dev;
  }

  Status EnterDir(const char* name, const struct statx& sx) {
    // The caller's mistake of a destination inside the source must not copy it into itself.
    if (sx.stx_ino == dst_id_.ino && fsops_detail::DirIdOf(sx).dev == dst_id_.dev) return Status::Ok();
    if (frames_.size() > kCopyMaxDepth) {
      return Status::Error("copy " + Shown(name) + ": deeper than " + std::to_string(kCopyMaxDepth) + " levels");
    }
    Frame& top = frames_.back();
    Fd src(fsops_detail::OpenDirNoFollow(top.src.get(), name));
    if (src.get() < 0) {
      if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR) return Vanished();
      return Fail("open", name, errno);
    }
    if (!SameSrc(src.get(), sx.stx_ino)) return Vanished();
    // 0700 while being filled: its own mode (perhaps read-only) comes with its times, in Finish.
    if (mkdirat(top.dst.get(), name, 0700) != 0) return Fail("make the copy of", name, errno);
    Fd dst(openat(top.dst.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    fsops_detail::DirId dst_id;
    if (dst.get() < 0 || fsops_detail::GetDirId(dst.get(), &dst_id) != 0) return Fail("open the copy of", name, errno);
    ++result_.entries;
    top.seek = true;
    pos_ = len_ = 0;
    frames_.push_back(Frame{name, sx.stx_ino, dst_id.ino, std::move(src), std::move(dst), file_copy::MetaOf(sx)});
    open_.push_back(frames_.size() - 1);
    Trim();
    return Status::Ok();
  }

  // Keeps at most kCopyOpenDirs frames open (see fsops_detail::CheckpointToClose).
  void Trim() {
    while (open_.size() > kCopyOpenDirs) {
      const size_t j = fsops_detail::CheckpointToClose(open_);
      Frame& f = frames_[open_[j]];
      f.src.Reset();
      f.dst.Reset();
      open_.erase(open_.begin() + static_cast<std::ptrdiff_t>(j));
    }
  }

  // The top frame was closed: opens it again, and the closed frames below it, by name from the
  // nearest open one, both source and copy, each checked to be the directory it was.
  Status Reopen() {
    const size_t top = frames_.size() - 1;
    for (size_t i = open_.back() + 1; i <= top; ++i) {
      Frame& f = frames_[i];
      Frame& below = frames_[i - 1];  // open: the nearest open one, or the one just opened
      f.src = Fd(fsops_detail::OpenDirNoFollow(below.src.get(), f.name.c_str()));
      f.dst = Fd(openat(below.dst.get(), f.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (f.src.get() < 0 || !SameSrc(f.src.get(), f.src_ino)) {
        return Status::Error("copy " + fsops_detail::Printable(PathTo(i)) +
                             ": the directory was moved or replaced while being copied; try again");
      }
      if (f.dst.get() < 0 || !SameDst(f.dst.get(), f.dst_ino)) {
        return Status::Error("copy " + fsops_detail::Printable(PathTo(i)) + ": its copy was moved or replaced while being made");
      }
      f.seek = true;
      open_.push_back(i);
      Trim();
    }
    return Status::Ok();
  }

  // The directory of frame `frame`, relative to the source ("" for the source itself).
  std::string PathTo(size_t frame) const {
    std::string rel;
    for (size_t i = 1; i <= frame; ++i) (rel += i > 1 ? "/" : "") += frames_[i].name;
    return rel;
  }

  // The top frame's listing is done: its copy gets its owner, xattrs, mode and times.
  Status Finish() {
    Frame& f = frames_.back();
    const char* what = "";
    if (int err = file_copy::SetMeta(f.src.get(), f.dst.get(), f.meta, &what)) return Fail(what, "", err);
    frames_.pop_back();
    open_.pop_back();  // the top is open while it is read
    pos_ = len_ = 0;
    if (!frames_.empty()) frames_.back().seek = true;
    return Status::Ok();
  }

  Status CopyFile(const char* name, const struct statx& sx) {
    Frame& top = frames_.back();
    const bool several = sx.stx_nlink > 1;
    if (several) {
      auto it = links_.find(sx.stx_ino);
      if (it != links_.end()) {
        bool linked = false;
        if (Status s = LinkTo(it->second, name, &linked); !s.ok() || linked) return s;
      }
    }
    const int flags = O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC;
    Fd in(openat(top.src.get(), name, flags | O_NOATIME));
    if (in.get() < 0 && errno == EPERM) in = Fd(openat(top.src.get(), name, flags));
    if (in.get() < 0) {
      if (errno == ENOENT || errno == ELOOP || errno == ENXIO) return Vanished();  // ENXIO: a socket swapped in
      return Fail("open", name, errno);
    }
    struct statx now;  // what is copied: the file as opened, checked to be the one listed
    if (statx(in.get(), "", AT_EMPTY_PATH, kMask, &now) != 0) return Fail("stat", name, errno);
    if (!S_ISREG(now.stx_mode) || now.stx_ino != sx.stx_ino || !fsops_detail::SameMount(fsops_detail::DirIdOf(now), src_id_))
      return Vanished();
    Fd out(openat(top.dst.get(), name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (out.get() < 0) return Fail("make the copy of", name, errno);
    bool reflinked = false;
    if (int err = file_copy::CopyData(in.get(), out.get(), now.stx_size, &data_, &reflinked)) return Fail("copy the data of", name, err);
    if (reflinked) {
      reflinked_ = true;
      result_.bytes += std::min<uint64_t>(now.stx_size, now.stx_blocks * 512);  // holes excluded, roughly
    } else if (now.stx_size > 0) {
      byte_copied_ = true;
    }
    const char* what = "";
    if (int err = file_copy::SetMeta(in.get(), out.get(), file_copy::MetaOf(now), &what)) return Fail(what, name, err);
    ++result_.entries;
    if (several) Remember(sx.stx_ino, out.get(), name);
    return Status::Ok();
  }

  // Remembers the copy of an inode with several links, while under the bounds; past them, its
  // further names become copies of their own.
  void Remember(ino_t ino, int out_fd, const char* name) {
    if (links_.size() >= opt_.links_remembered) return;
    std::string path = Rel(name);
    if (link_path_bytes_ + path.size() > kCopyLinkPathBytes) return;
    struct stat st;
    if (fstat(out_fd, &st) != 0) return;
    link_path_bytes_ += path.size();
    links_.emplace(ino, Linked{st.st_ino, std::move(path)});
  }

  // Makes `name` in the top frame's copy a hard link to the earlier copy `to`, found again by
  // name from the destination (no symlink followed) and checked to be that copy. *linked false
  // when it is no longer there or cannot take another link: then the caller copies the file.
  Status LinkTo(const Linked& to, const char* name, bool* linked) {
    Fd dir(openat(frames_.front().dst.get(), ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
    size_t start = 0;
    for (size_t slash; dir.get() >= 0 && (slash = to.path.find('/', start)) != std::string::npos; start = slash + 1) {
      dir = Fd(openat(dir.get(), to.path.substr(start, slash - start).c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    }
    const std::string last = to.path.substr(start);
    struct stat st;
    if (dir.get() < 0 || fstatat(dir.get(), last.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_ino != to.dst_ino) return Status::Ok();
    if (linkat(dir.get(), last.c_str(), frames_.back().dst.get(), name, 0) != 0) {
      if (errno == EMLINK) return Status::Ok();
      return Fail("link the copy of", name, errno);
    }
    *linked = true;
    return Status::Ok();
  }

  Status CopyLink(const char* name, const struct statx& sx) {
    Frame& top = frames_.back();
    Fd link(openat(top.src.get(), name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
    struct stat st;
    if (link.get() < 0 || fstatat(link.get(), "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) return Vanished();
      return Fail("open", name, errno);
    }
    if (!S_ISLNK(st.st_mode) || st.st_ino != sx.stx_ino) return Vanished();
    char target[4097];
    ssize_t n = readlinkat(link.get(), "", target, sizeof target);
    if (n < 0) return Fail("read the symlink", name, errno);
    if (n >= static_cast<ssize_t>(sizeof target)) return Fail("read the symlink", name, ENAMETOOLONG);
    target[n] = '\0';
    if (symlinkat(target, top.dst.get(), name) != 0) return Fail("make the copy of", name, errno);
    const char* what = "";
    if (int err = file_copy::SetLinkMeta(top.src.get(), top.dst.get(), name, file_copy::MetaOf(sx), &what))
      return Fail(what, name, err);
    ++result_.entries;
    return Status::Ok();
  }

  const int src_root_, dst_root_;
  const CopyOptions& opt_;
  fsops_detail::DirId src_id_, dst_id_;
  std::vector<Frame> frames_;
  std::vector<size_t> open_;  // indexes of the frames whose descriptors are open, ascending
  std::unique_ptr<char[]> buf_;
  size_t pos_ = 0, len_ = 0;  // the unread part of buf_, the top frame's
  std::unordered_map<ino_t, Linked> links_;
  size_t link_path_bytes_ = 0;
  file_copy::DataCopy data_;
  bool reflinked_ = false, byte_copied_ = false;
  CopyResult result_;
  CopyProgress told_;
};

}  // namespace copy_detail
}  // namespace

Result<CopyResult> CopyContents(int src_fd, int dst_fd, const CopyOptions& opt) {
  return copy_detail::TreeCopier(src_fd, dst_fd, opt).Run();
}
