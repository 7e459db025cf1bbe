// The name a released volume's directory gets in its root's archive folder (class parameter
// onDelete: "archive"), which carries everything needed to expire it: any instance, even after
// a restart and with the class gone, reads from the name alone when to remove it.
//   <dir>--<archived>--until-<expires>[--<n>]   or   <dir>--<archived>--keep[--<n>]
// <dir> is the volume's directory inside its root with '/' made '_' (no DNS name holds '_', so
// "ns/name" stays told apart from another volume's "ns-name"); one longer than 200 bytes is cut
// to 200 that end in '~' and 16 hex digits of the SHA-256 of the whole directory name, so that
// the whole name fits in 255 bytes and two long names that begin alike still differ. Times are
// UTC, "20261127T181500Z"; <n> (2, 3, ...) tells apart two archives of one directory made in the
// same second. Pure; thread-safe.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

// Names longer than this are refused by Linux filesystems (NAME_MAX).
constexpr size_t kArchiveNameMax = 255;

// What an archive's name says.
struct ArchiveNameParts {
  std::string dir;          // the directory part (ArchiveDirPart: '/' made '_', possibly cut)
  int64_t archived_at = 0;  // seconds since the epoch (UTC)
  bool keep = false;        // kept for ever ("--keep")
  int64_t expires_at = 0;   // !keep: seconds since the epoch when it may be removed
};

// "20261127T181500Z" for `seconds` since the epoch; "" for a time before 1970 or after 9999.
std::string ArchiveTime(int64_t seconds);

// The name for volume directory `dir_name` ("ns-claim-pvc-<uid>", or a pathPattern's "ns/name")
// archived at `now`, kept `keep_seconds` (0: for ever), the `counter`-th try of that second (1:
// no suffix). Never longer than kArchiveNameMax: the directory part is cut, the times kept.
std::string ArchiveName(const std::string& dir_name, int64_t now, int64_t keep_seconds, int counter = 1);

// The <dir> part of the archive names of volume directory `dir_name` (cut as said above).
std::string ArchiveDirPart(const std::string& dir_name);

// The start every archive of `dir_name` has (its directory part and "--"), for naming them in
// messages ("<prefix>*"). Another directory's archives may start so too ("ns/a" and "ns/a--b"):
// ArchiveOf tells them apart.
std::string ArchivePrefix(const std::string& dir_name);

// Is `name` an archive of volume directory `dir_name`: made by ArchiveName, its directory part
// exactly dir_name's?
bool ArchiveOf(const std::string& name, const std::string& dir_name);

// The parts of an archive's name; nothing for a name not made by ArchiveName (the archive
// folder may hold what someone put there by hand).
std::optional<ArchiveNameParts> ParseArchiveName(const std::string& name);

// Has the archive's time come at `now` (the wall clock)? Never when kept for ever.
bool ArchiveExpired(const ArchiveNameParts& parts, int64_t now);

// May the archive be removed? Its time has come at `now` (ArchiveExpired), and it has been
// watched for `watched` seconds (on a clock that no correction of the wall clock moves, since
// the caller first saw it) at least as long as its name says it is kept (expires_at less
// archived_at). The name alone is not enough: its times come from the wall clock of the node
// that archived it, which may have been behind (a board without a clock chip, before NTP), so
// its expiry may lie in the past as soon as that clock is corrected; and the node that looks
// may be ahead. Never when kept for ever.
bool ArchiveDue(const ArchiveNameParts& parts, int64_t now, int64_t watched);
