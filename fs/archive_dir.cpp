// The archive folder of a root: the bodies (archive_dir.hpp has the contracts).
#include "fs/archive_dir.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>

#include "base/log.hpp"

Result<Root> OpenArchiveFolder(const Root& root, bool create) {
  const std::string path = fsops_detail::Join(root.path(), kArchiveFolder);
  if (create && mkdirat(root.fd(), kArchiveFolder, 0700) != 0 && errno != EEXIST) return PosixError("mkdir " + path, errno);
  Result<Root> archive = root.OpenBelow(kArchiveFolder, false);
  if (!archive.ok()) return archive;
  // Checked on the descriptor we go on using: what it names cannot be swapped in between.
  struct stat st;
  if (fstat(archive->fd(), &st) != 0) return PosixError("stat " + path, errno);
  if (st.st_uid != 0)
    return Status(Status::kConflict,
                  path + " is owned by uid " + std::to_string(st.st_uid) + ", not root: that user could read and change archived "
                  "data; on the node, chown root:root " + path + " && chmod 0700 " + path + " (once you trust what it holds), or "
                  "move it away");
  if ((st.st_mode & 077) != 0) {
    char was[8], now[8];
    std::snprintf(was, sizeof was, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    std::snprintf(now, sizeof now, "%04o", static_cast<unsigned>(st.st_mode & 07700));
    if (fchmod(archive->fd(), st.st_mode & 07700) != 0) return PosixError("chmod " + path, errno);
    LogWarn(path + " was mode " + was + ": made " + now + ", so that only root reads archived data");
  }
  return archive;
}

Result<std::string> MoveIntoArchive(const Root& from, const std::string& leaf, const Root& archive,
                                    const std::function<std::string(int counter)>& name_for) {
  const std::string source = fsops_detail::Printable(fsops_detail::Join(from.path(), leaf));
  if (!Root::ValidName(leaf)) return Status::Invalid("invalid directory name \"" + source + "\"");
  struct stat st;
  if (fstatat(from.fd(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return PosixError("stat " + source, errno);
  if (!S_ISDIR(st.st_mode))
    return Status(Status::kConflict, source + " is not a directory (a file or symlink); left as it is");
  for (int counter = 1; counter <= 100; ++counter) {
    const std::string name = name_for(counter);
    if (!Root::ValidName(name)) return Status::Invalid("invalid archive name \"" + fsops_detail::Printable(name) + "\"");
    if (renameat2(from.fd(), leaf.c_str(), archive.fd(), name.c_str(), RENAME_NOREPLACE) == 0) return name;
    if (errno == EEXIST) continue;
    const int err = errno;
    const std::string target = fsops_detail::Printable(fsops_detail::Join(archive.path(), name));
    if (err == EXDEV)
      return Status(Status::kError, "cannot move " + source + " to " + target + ": " + fsops_detail::ErrnoText(err) +
                                        " (is " + archive.path() + " under another project quota, or mounted?)", err);
    return PosixError("move " + source + " to " + target, err);
  }
  return Status::Error("cannot move " + source + " into " + archive.path() + ": 100 names taken");
}

std::vector<std::string> ArchivesStartingWith(const Root& archive, const std::string& prefix) {
  std::vector<std::string> found;
  Result<std::vector<std::string>> dirs = archive.ListDirs();
  if (!dirs.ok()) return found;
  for (const std::string& d : *dirs)
    if (d.compare(0, prefix.size(), prefix) == 0) found.push_back(d);
  return found;
}
