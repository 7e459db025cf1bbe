// The archive folder of a volume root, <root>/.archive: where released volumes of a class with
// onDelete: "archive" are moved (decide/archive_name.hpp names them), until they expire. The
// folder is hidden (no volume's directory starts with '.'), made 0700 and owned by the
// provisioner (root), so only root on the node reads archived data; one found there already is
// used only if it is root's too (closed to 0700 if others may look in). It is never reached
// through a symlink, nor on another mount: a rename stays inside one filesystem, atomic.
// Filesystem layer: no Kubernetes types. Thread-safe (no state).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "fs/fsops.hpp"

inline constexpr const char* kArchiveFolder = ".archive";

// root/.archive as a Root of its own (Root::OpenBelow: never through a symlink, never onto
// another mount or a btrfs subvolume). `create`: made first if missing, mode 0700. kNotFound when
// missing and not made; kConflict (naming the path, touching nothing) when it is a symlink, a
// file, a mount point or a subvolume, and when it is not owned by root (its owner could read
// and change what is archived there: the message says how to fix it). One of root's that
// group or others may read or enter is made 0700 through the open descriptor, and logged.
Result<Root> OpenArchiveFolder(const Root& root, bool create);

// Moves the directory from/leaf into `archive` (same filesystem) as name_for(1), or, if that
// name is taken, name_for(2), name_for(3), ... (renameat2 RENAME_NOREPLACE: an archive is never
// replaced), up to 100 tries. The name it got; kNotFound when from/leaf does not exist;
// kConflict when it is not a directory (a file or symlink: left as it is); kError naming the
// paths otherwise (EXDEV: a project quota's inherit flag on .archive, or another mount).
Result<std::string> MoveIntoArchive(const Root& from, const std::string& leaf, const Root& archive,
                                    const std::function<std::string(int counter)>& name_for);

// The names of the directories in `archive` that begin with `prefix`, sorted.
std::vector<std::string> ArchivesStartingWith(const Root& archive, const std::string& prefix);
