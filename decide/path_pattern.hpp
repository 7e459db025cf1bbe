// A class's pathPattern: the directory of a claim's volume named from the claim's namespace,
// name and labels ("${.PVC.namespace}/${.PVC.name}"), instead of "<ns>-<claim>-pvc-<uid>", so
// that a claim made again (after a delete, or in a rebuilt cluster) finds its directory. The
// result stays inside its root: it is a relative path whose every part is a lower-case DNS
// name (the rule for namespaces and claim names), so no part is "", ".", ".." or hidden, and
// none holds "/" or anything a shell would read. Pure; safe from any thread.
#pragma once
#include <string>

#include "base/objects.hpp"
#include "base/status.hpp"

// Is `pattern` one this provisioner can use? "" when it is; else why not: text outside
// variables that breaks the rules above, a variable other than ${.PVC.namespace},
// ${.PVC.name} and ${.PVC.labels.<key>}, a "/" at either end or twice, no variable at all, or
// a pattern that could hand one namespace's directory to another:
//  - by default its first part must be ${.PVC.namespace} alone ("${.PVC.namespace}/..."), with
//    at least one part after it, so that every directory it makes lies in its namespace's folder
//    (a namespace's name holds no "/": it is always exactly one part). Claims of one namespace
//    may still share a name (the second is refused while the first has a volume).
//  - `shared_across_namespaces` (class parameter sharedAcrossNamespaces: "true"): any namespace
//    may reach any other's directories. Its first part must then be plain text holding a "."
//    ("shared.data/${.PVC.labels.app}"), which no namespace's name holds, so that its
//    directories never meet a namespace's folder made by another class on the same root.
std::string CheckPathPattern(const std::string& pattern, bool shared_across_namespaces = false);

// The start every namespace-bound pattern has.
inline constexpr const char* kNamespaceFirst = "${.PVC.namespace}/";

// The directory the pattern names for `claim` (relative to the root). kInvalid, naming the
// variable and its value, when a part does not follow the rules (a label value with capitals or
// "_", an empty or missing label), or the result is longer than 4096 bytes or a part than 253.
Result<std::string> ExpandPathPattern(const std::string& pattern, const Claim& claim);

// Is `dir` a relative directory ExpandPathPattern could have made: parts of the rules above,
// joined by single "/"? (Read back from a PV's kDirName annotation, which anyone who may write
// PVs can change: deleting is only done at such a path.)
bool IsPatternDir(const std::string& dir);

// The parent of a pattern directory ("ns" for "ns/name"; "" for one with no "/"), and its last
// name ("name"; the whole of one with no "/").
std::string ParentDir(const std::string& dir);
std::string LeafName(const std::string& dir);

// A volume's directory inside its root, for the parts that only read it (usage, expansion):
// its kDirName annotation where it has one that IsPatternDir, else "<ns>-<claim>-<pv name>"
// (VolumeDirName); "" when neither can be made. Deleting checks more (AtRecomputedPath).
std::string VolumeDirOf(const Volume& v);
