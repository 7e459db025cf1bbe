// The one rule that guards a volume's directory on this node: a directory that another PV
// names, or one inside or around another PV's directory, is never taken over, chowned, moved or
// removed (deleting the outer one would take the inner's data: local-path-provisioner's #485).
// Every path that makes, reattaches, joins, archives or removes a directory asks it first:
// provisioning (PatternDirs), a volume on every node joining or leaving a node (EveryNodeSteps)
// and a released volume's removal or archive (Deleter). Any PV counts, of any provisioner, a
// hand-written one too, as long as it names a directory on this node (PVs made on another node
// name directories there). "Around" counts only PVs below a configured root: a PV of a whole
// root, or of a folder above it, is not a volume of this provisioner's, and would otherwise
// stop every volume of that root. Reads the PV cache only; thread-safe.
#pragma once
#include <optional>
#include <string>

#include "base/config.hpp"
#include "base/objects.hpp"
#include "kube/informer.hpp"

class DirGuard {
 public:
  // Both must outlive the guard.
  DirGuard(const Config& cfg, const Informer<Volume>* volumes) : cfg_(cfg), volumes_(volumes) {}

  // The PV other than `pv` (by name) on this node whose directory is `path`, lies inside it, or
  // lies around it below a root; nothing when there is none. `path`: absolute, normalised (a
  // PV's path is normalised before it is compared: "/r/a/", "/r//a" and "/r/./a" are "/r/a").
  std::optional<Volume> Overlapping(const std::string& path, const std::string& pv) const;

  // What a user is told of `other` and `path`: "PersistentVolume X (claim ns/c, Bound) uses
  // /r/ns/c" and, where the two differ, ", inside /r/ns" or ", around /r/ns/c/d". Told to a
  // claim of namespace `viewer` (when given) about a volume not of that namespace (Foreign):
  // neither its claim nor its path, only where it lies relative to `path`.
  static std::string Uses(const Volume& other, const std::string& path, const std::string& viewer = "");
  // Is `other` not a volume of namespace `viewer`'s claims (another's, or one bound to none)?
  static bool Foreign(const Volume& other, const std::string& viewer) {
    return !viewer.empty() && (!other.has_claim_ref || other.claim_ref.namespace_ != viewer);
  }

  // Does PV `v` name a directory on this node? Always in single-node mode; a shared or
  // every-node volume: yes; else the node it was made on (our annotation), or its node affinity.
  bool Here(const Volume& v) const;

 private:
  bool BelowARoot(const std::string& path) const;

  const Config& cfg_;
  const Informer<Volume>* volumes_;
};
