// What a node's instance tells the scheduler about room for new volumes (storage capacity,
// CAPACITY_PROVISIONER_NAME): which classes get a CSIStorageCapacity object from each node, the
// figure it carries, its name, and when a new figure is worth an API write. The scheduler
// places a pod whose WaitForFirstConsumer claim is unbound only on a node whose object for the
// claim's class says the claim fits (kubernetes/kubernetes, volumebinding/binder.go
// hasEnoughCapacity); a node without one gets no such pod. Pure; thread-safe.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "base/config.hpp"
#include "base/objects.hpp"
#include "decide/class_params.hpp"

// Does each node's instance publish a capacity object for class `sc`? A WaitForFirstConsumer
// class of CAPACITY_PROVISIONER_NAME, in node-aware mode (the scheduler weighs capacity only
// for the claims whose node it chooses, and only for a provisioner with a CSIDriver).
bool ClassGetsCapacity(const Config& cfg, const StorageClass& sc);

// The name of `node`'s object for class `class_name`: "hostpath-" and 16 hex digits of the
// SHA-256 of both (a node's and a class's names may each be 253 characters; an object's too).
std::string CapacityObjectName(const std::string& node, const std::string& class_name);

// The label selector of `node`'s objects (hostpath-provisioner.io/node=<its label value>), and
// the labels each carries: that one, which class it is for, and which install made it (its
// CAPACITY_PROVISIONER_NAME, as NodeLabelValue spells a long name): two installs in one
// namespace select the same node's objects, and each leaves the other's alone.
std::string CapacitySelector(const std::string& node);
inline constexpr const char* kCapacityClassLabel = "hostpath-provisioner.io/class";
inline constexpr const char* kCapacityDriverLabel = "hostpath-provisioner.io/driver";

// What a new claim of a class may get on this node now.
struct CapacityFigure {
  uint64_t capacity = 0;  // bytes
  // A size larger than any claim's, as maximumVolumeSize: the class does not check free space
  // (checkFreeSpace "false"), so a claim of any size is provisioned here.
  bool unlimited = false;
};

// The figure for a class with parameters `p`, whose root has `available` bytes free (statvfs)
// and `promised` bytes promised to volumes there beyond their use (Promises::Under): a new
// claim is provisioned if it fits the free space, less, unless the class overcommits, those
// promises (fs/space.hpp SpaceShortfall, the check it meets).
CapacityFigure CapacityFor(const ClassParameters& p, uint64_t available, uint64_t promised);

// maximumVolumeSize for an unlimited figure: the largest quantity, 2^63-1 bytes.
inline constexpr const char* kUnlimitedSize = "9223372036854775807";

// Is `now` worth a write over the published figure `was` (none yet: always)? When it moved by
// more than 1% of `was` and 1 MiB, or, when `prompt` (a volume was made or removed, or a claim
// did not fit), by anything at all. The 1% keeps a disk that logs trickle onto from writing on
// every check; near full it is small, where a claim's fit is decided.
bool CapacityWorthWriting(std::optional<uint64_t> was, uint64_t now, bool prompt);
