// A StorageClass's parameters as this provisioner reads them, validated, and the class-level
// choices that follow (shared volumes, the reclaim policy). Pure: no I/O; safe from any thread.
#pragma once
#include <cstdint>
#include <string>

#include "base/config.hpp"
#include "base/objects.hpp"

// StorageClass parameters this provisioner understands, validated.
struct ClassParameters {
  int uid = -1, gid = -1;  // owner of new directories; -1 = root as created
  bool has_mode = false;
  unsigned mode = 0;       // octal mode of new directories, overrides the configured default
  bool local = false;      // volumeType local: a `local` PV rather than a hostPath one
  std::string root;        // pvDir, else PV_DIR: where the class's volumes are made
  bool require_mount = false;  // requireMount: the root must be a mounted filesystem
  bool all_nodes = false;  // nodes: all: a directory on every node, a PV without node affinity
  bool shared = false;     // node-aware, requireMount, one directory: a root every host mounts (ClassIsShared)
  bool check_space = true;  // checkFreeSpace
  bool overcommit = false;  // overcommit
  std::string quota = "false";  // quota: "true" (enforce the size, or fail), "auto" (where the root can), "false"
  std::string on_delete = "delete";  // onDelete: a released Delete volume's directory is "delete"d, "archive"d or "retain"ed
  std::string archive_for;     // archiveFor (onDelete archive): how long an archive is kept, as written; "0": for ever
  int64_t archive_seconds = 0;  // ... in seconds (0: for ever)
  std::string path_pattern;    // pathPattern: the directory named from the claim (path_pattern.hpp); "": the default name
  bool shared_across_namespaces = false;  // sharedAcrossNamespaces: the pattern may give one namespace's directory to another
};

// Does this class make shared volumes? In node-aware mode, a class of ours that requires a
// mounted root (requireMount, or REQUIRE_MOUNT by default), with one directory (not nodes:
// all) of type hostPath: such a root is a share every host mounts at the same path. Read
// from the raw parameters (ParseClassParameters says whether they are valid).
bool ClassIsShared(const Config& cfg, const StorageClass* sc);

// Does this class of ours name directories by a pathPattern? (the raw parameter; ParseClassParameters
// says whether it is valid)
bool ClassHasPathPattern(const Config& cfg, const StorageClass* sc);

// Parses the class's parameters into *out, starting from the configured defaults (PV_DIR,
// REQUIRE_MOUNT, CHECK_FREE_SPACE, OVERCOMMIT, QUOTA). Returns "" on success; else an error
// message naming the parameter (an unknown key, a bad value, a pvDir not configured, or
// parameters that do not go together), with *out partly filled.
std::string ParseClassParameters(const Config& cfg, const StorageClass& sc, ClassParameters* out);

// The reclaim policy a new volume gets: the configured override, else the class's, else
// Kubernetes' default, Delete.
std::string ReclaimPolicyFor(const Config& cfg, const StorageClass& sc);
