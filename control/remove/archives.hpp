// The archive pass: each root's archive folder (<root>/.archive, fs/archive_dir.hpp) looked at
// now and then: archives whose time has come (their names say when: decide/archive_name.hpp)
// and that this process has seen for as long as they are kept (ArchiveDue: the clock that named
// them may have been wrong; a restart starts that watch again) are removed, as safely as a
// volume's directory (archiving.hpp's RemoveArchive); the others
// are counted and measured, once each (an archive never changes), for /metrics and for the
// message of a claim that does not fit. Names it cannot read (put there by hand) are left
// alone, and logged once. The controller runs a pass on a worker (key "scan/archives") at
// start and at every resync (RESYNC_PERIOD), so only an instance that may act (the lease
// holder) runs one.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <sys/types.h>

#include "fs/roots.hpp"

// What one root's archive folder holds.
struct ArchiveFigures {
  std::string root;        // the root's path
  size_t count = 0;        // archives (directories in .archive)
  uint64_t bytes = 0;      // space they take, as du counts it (those measured)
  size_t unmeasured = 0;   // archives not measured yet (bytes leaves them out)
};

class ArchivePass {
 public:
  // Does this instance still act (it holds the lease, and is not halted)? Asked before each removal.
  using MayAct = std::function<bool()>;

  // `roots` (which must outlive the pass) and the paths of every configured root (PV_DIR and
  // ALLOWED_PV_DIRS: a root no claim has used since the start is opened too). A removal or a
  // measurement stops early once *cancel (if given) is set.
  ArchivePass(Roots* roots, std::vector<std::string> root_paths, MayAct may_act, const std::atomic<bool>* cancel);

  // One pass over every root that can be opened (a root that cannot, or without an archive
  // folder, holds none; a .archive that is no directory, or not root's, is logged once and
  // nothing in it removed). `now`: seconds since the epoch. Removes the archives that are due
  // (ArchiveDue, watched since the first pass that saw them, on the boot clock; while may_act
  // says yes; a failure is logged and tried again on the next pass), says once of each one
  // whose time has come by its name but not by the watch when it will go, measures the new
  // ones, and keeps the figures. Thread-safe; passes run one at a time.
  void Run(int64_t now);

  // Each root's figures as the last pass found them (roots with no archives left out).
  std::vector<ArchiveFigures> Snapshot() const;

  // The archives in root `path` now (listed again), with the bytes of those measured. For the
  // message of a claim that does not fit. Thread-safe.
  ArchiveFigures Now(const std::string& path);

 private:
  // Since when (BootSeconds) this process has seen the archive directory dev/ino, and whether
  // it said once why it keeps one whose time has come.
  struct Watch {
    dev_t dev = 0;
    ino_t ino = 0;
    int64_t since = 0;
    bool told = false;
  };
  ArchiveFigures PassOver(const Root& root, int64_t now, int64_t boot, std::map<std::string, Watch>* watched);
  bool Measure(const Root& archive, const std::string& name, uint64_t* bytes);

  Roots* roots_;
  const std::vector<std::string> root_paths_;
  MayAct may_act_;
  const std::atomic<bool>* cancel_;
  std::mutex run_mu_;  // one pass at a time
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> measured_;  // "<root>/.archive/<name>" -> bytes
  std::set<std::string> reported_;           // names that could not be read, logged once
  std::map<std::string, ArchiveFigures> figures_;  // by root path
  std::map<std::string, Watch> watched_;  // "<root>/.archive/<name>" -> seen since (run_mu_ guards it)
};

// For the message of a claim that does not fit under a root: "; <root>/.archive holds N
// archives (X): remove those no longer needed by hand, or give the class a shorter archiveFor"
// ("" when it holds none).
std::string ArchivesNote(const ArchiveFigures& f);
