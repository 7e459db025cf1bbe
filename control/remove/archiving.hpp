// A released volume's directory moved into its root's archive folder (class parameter
// onDelete: "archive"; fs/archive_dir.hpp has the folder, decide/archive_name.hpp the names),
// without the limit it was made under, and an archive removed once its time has come: the
// steps the deleter (deleter.hpp), the steps on every node (every_node.hpp) and the expiry
// pass (archives.hpp) share, with the words they say it in. Thread-safe (no state).
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

#include "control/make/volume_dir.hpp"
#include "fs/fsops.hpp"

// Event reasons (Normal) on a released volume whose directory stays: moved to its root's
// archive folder (class parameter onDelete: "archive"), or kept in place ("retain").
namespace reason {
inline constexpr const char* kVolumeArchived = "VolumeArchived";
inline constexpr const char* kVolumeRetained = "VolumeRetained";
}  // namespace reason

// How long the PV's kArchiveFor annotation (`archive_for`: "168h"; "" or "0": for ever) keeps an
// archive, in seconds, 0 for ever. An unreadable value (the annotation edited) keeps it for ever,
// and *note says so (" (annotation ... unreadable: ...)"), else *note is "".
int64_t ArchiveSeconds(const std::string& archive_for, std::string* note);

// Seconds since the epoch now (the wall clock: archive names carry UTC times).
int64_t NowSeconds();

// Moves a released volume's directory, parent/leaf (a.dir_name's last name in the directory
// Roots::Place gave), into root's archive folder (made if missing) as ArchiveName(dir_name,
// now, keep_seconds): the name of the archive, in root/.archive. An archive keeps no limit:
// where the directory and its PV agree on one (`recorded`), it is cleared first
// (QuotaLimits::Unlimit), the ID kept (the body says why that is safe); where they disagree,
// no limit is touched. kNotFound when the directory is gone (an earlier attempt archived it:
// ArchivedBefore says where); kConflict, nothing changed, when .archive is a symlink, a file or
// a mount, or parent/leaf is not a directory; other errors name the paths.
Result<std::string> ArchiveVolumeDir(const Root& root, const Root& parent, const std::string& leaf,
                                     const std::string& dir_name, const QuotaId& recorded, int64_t now,
                                     int64_t keep_seconds);

// For an event: "moved <path> to <root>/.archive/<name>; it is removed after <time> (UTC)" (or
// "it is kept until removed by hand").
std::string ArchivedMessage(const std::string& root_path, const std::string& dir_name, const std::string& name,
                            int64_t now, int64_t keep_seconds);

// For an event, when a volume's directory to archive is gone: "<path> was already gone:
// archived by an earlier attempt, as <root>/.archive/<name>" (the latest of its archives, as
// ArchiveOf tells them from other directories'), or that there is none (removed by hand?).
std::string ArchivedBefore(const Root& root, const std::string& dir_name);

// Removes an archive, archive/name (archive: root/.archive), as RemoveVolumeDir removes a
// volume's directory (never following a symlink, never crossing a mount; kCanceled once *cancel
// is set). A btrfs archive's qgroups are released after: its subvolume ID is read from the
// archive itself (QuotaLimits::Of), which no tenant can forge. A project ID is not touched (its
// limits were cleared when it was archived; once its files are gone, nothing is charged to it
// and it may serve again; the ID the directory carries now could have been set by its owner).
Status RemoveArchive(const Root& archive, const std::string& name, const std::atomic<bool>* cancel = nullptr);
