// Which volume holds each directory a class's pathPattern names: a claim made again gets the
// directory of the one before it (reattach), so two PVs must never name one directory, nor one
// inside the other. A directory is free for a new volume when the guard (dir_guard.hpp) finds
// no PV that names it or a path within it or around it, and no worker of this instance is
// making, or has just made, a volume there. One instance is shared by every worker.
// Instances sharing a root (a network share) can still race each other.
#pragma once
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "base/config.hpp"
#include "base/objects.hpp"
#include "control/dir_guard.hpp"
#include "control/sync.hpp"
#include "kube/informer.hpp"

class PatternDirs {
 public:
  // Is a clone's copy being made for volume `pv` (queued, running, or done and not yet told)?
  using Copying = std::function<bool(const std::string& pv)>;

  // All must outlive this. `created`: as VolumeMaker's (PVs made whose watch event has not come).
  PatternDirs(const DirGuard* guard, const Informer<Volume>* volumes, const NameSet* created, Copying copying);

  // Reserves the directory at `path` for volume `pv` of a claim in namespace `ns` until Finish.
  // "" when it is free; else what the claim's user is told: the PV that names it (with how to
  // free the directory and keep its data; another namespace's claim not named), or that another
  // claim is being provisioned there. Thread-safe.
  std::string Begin(const std::string& path, const std::string& pv, const std::string& ns);

  // The attempt of Begin ended: `made` (its PV created, or its clone being copied) keeps the
  // reservation until the PV is in the cache or gone, or the copy ends without one (later
  // Begins tell); otherwise it is dropped. Thread-safe.
  void Finish(const std::string& path, const std::string& pv, bool made);

  // The PV in the cache, other than `pv`, whose recorded quota (kQuota annotation) is `quota`
  // ("project 1234567"): a directory to reattach whose project ID a tenant set to another
  // volume's must not take that limit over. "" when none.
  std::string QuotaHolder(const std::string& quota, const std::string& pv) const;

 private:
  struct Entry {
    std::string pv;
    bool active = false;  // a worker is making it
  };
  const DirGuard* guard_;
  const Informer<Volume>* volumes_;
  const NameSet* created_;
  Copying copying_;
  std::mutex mu_;
  std::map<std::string, Entry> held_;  // by path
};
