// Whether a new volume fits under its root. The space a filesystem has for new volumes is its
// free space, minus, unless the class overcommits, what volumes of ours under the same root
// were promised (their capacity) and may still fill: what they already use is not free any
// more, so it counts once (the last usage scan's figure, usage.hpp, when there is one). Room
// found is reserved in the same step (Promises::Reserve), so volumes decided at once all count.
// Nothing walks directories here: a provision costs one statvfs. The accounting sits behind
// SpaceBackend, so that a quota backend (ext4/xfs project quotas, which would also enforce the
// size) can replace it.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "base/status.hpp"

class Root;  // fs/fsops.hpp

class SpaceBackend {
 public:
  virtual ~SpaceBackend() = default;
  // Bytes of the root's filesystem that new data may use.
  virtual Result<uint64_t> Available(const Root& root) const = 0;
};

// The filesystem's own figure: statvfs's blocks available to unprivileged users.
class StatvfsSpace : public SpaceBackend {
 public:
  Result<uint64_t> Available(const Root& root) const override;
};

// Pure. Does a volume of `request` bytes fit, with `available` bytes free on the filesystem
// and `promised` bytes promised to `volumes` other volumes under the same root? "" if it does,
// else a message naming the sizes (SpaceAdvice says what to do).
std::string SpaceShortfall(int64_t request, uint64_t available, uint64_t promised, size_t volumes,
                           bool overcommit);

// Pure. What a user can do when a new volume (`growth` false) or a volume's growth did not fit
// under its root, with a class (`class_name`) that overcommits or not: only what every cluster
// allows. Lowering the request is not offered: Kubernetes refuses any change to a pending claim's
// spec (it can be made anew instead), and lowers a bound claim's request only with the feature
// gate RecoverVolumeExpansionFailure (alpha in 1.23, on by default from 1.32), then only to above
// its capacity; which the server allows cannot be told from here.
std::string SpaceAdvice(bool growth, bool overcommit, const std::string& class_name);

// What volumes of ours were promised, per root, beyond what they use, kept up to date from the
// watch and the usage scan, so that a provision never walks the cache. A worker that finds room
// for a new volume, or for a volume's growth, reserves it in the same step (Reserve), so that
// workers deciding at the same time never all see the same room; the reservation holds until
// the volume's watch event brings the size it reserved, or until Release. Thread-safe.
class Promises {
 public:
  // Volume `name` is promised `bytes` under `root` (root "" or bytes < 0: it counts nowhere).
  // What it was last found to use is kept; so is a reservation for more than `bytes`.
  void Set(const std::string& name, const std::string& root, int64_t bytes);

  // Checks that `want` bytes fit under `root` (SpaceShortfall, with `available` bytes free and
  // what the other volumes there were promised) and, if they do, reserves `bytes` for volume
  // `name` there: a new volume's size, or a volume's new size. Returns "" when reserved, else
  // SpaceShortfall's message.
  std::string Reserve(const std::string& name, const std::string& root, int64_t want, uint64_t bytes,
                      uint64_t available, bool overcommit);

  // Drops volume `name`'s reservation (its provision or expansion failed): it counts as its
  // watch event last said, or nowhere if none came.
  void Release(const std::string& name);

  // Volume `name` uses `bytes` (its last usage scan): only the rest of its promise counts.
  // Nothing for a volume not Set.
  void SetUsed(const std::string& name, uint64_t bytes);

  // What volume `name` was last found to use (0 when not known).
  uint64_t Used(const std::string& name) const;

  // The bytes still promised under `root` (each volume's capacity, or the size reserved for it
  // if larger, less what it uses, at least 0), and to how many volumes, leaving out `except`.
  std::pair<uint64_t, size_t> Under(const std::string& root, const std::string& except) const;

 private:
  struct Volume {
    std::string root;
    uint64_t promised = 0, used = 0;
    uint64_t reserved = 0;  // a size Reserve found room for, until its watch event or Release
    bool known = false;     // Set by a watch event (else only reserved)
    uint64_t Outstanding() const {
      const uint64_t size = std::max(promised, reserved);
      return size > used ? size - used : 0;
    }
  };
  struct Total {
    uint64_t bytes = 0;
    size_t volumes = 0;
  };

  std::pair<uint64_t, size_t> UnderLocked(const std::string& root, const std::string& except) const;
  void Add(const std::string& name, Volume v);
  void Remove(std::unordered_map<std::string, Volume>::iterator it);

  mutable std::mutex mu_;
  std::unordered_map<std::string, Volume> by_name_;
  std::map<std::string, Total> by_root_;
};
