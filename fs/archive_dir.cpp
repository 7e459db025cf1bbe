// The archive folder of a root: the bodies (archive_dir.hpp has the contracts).
#include "fs/archive_dir.hpp"

#include <fcntl.h>
#include <stdio.h>

#include <cerrno>

Result<Root> OpenArchiveFolder(const Root& root, bool create) {
  if (create && mkdirat(root.fd(), kArchiveFolder, 0700) != 0 && errno != EEXIST)
    return PosixError("mkdir " + fsops_detail::Join(root.path(), kArchiveFolder), errno);
  return root.OpenBelow(kArchiveFolder, false);
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
