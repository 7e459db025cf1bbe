// A class's pathPattern: the bodies (path_pattern.hpp has the contracts). The ${...} syntax is
// the NFS subdir provisioner's, which users know; hand-written, as it is only this.
#include "decide/path_pattern.hpp"

#include "base/paths.hpp"
#include "decide/names.hpp"

namespace {

constexpr size_t kMaxPart = 253;
constexpr size_t kMaxDir = 4096;

// Calls text(t) for each literal run and var(name) for each "${...}" (name without the braces);
// stops at the first that returns a non-empty error, or at an unclosed "${". Returns the error.
template <typename Text, typename Var>
std::string Walk(const std::string& pattern, Text text, Var var) {
  size_t i = 0;
  while (i < pattern.size()) {
    size_t open = pattern.find("${", i);
    if (open == std::string::npos) open = pattern.size();
    if (open > i)
      if (std::string e = text(pattern.substr(i, open - i)); !e.empty()) return e;
    if (open == pattern.size()) break;
    size_t close = pattern.find('}', open);
    if (close == std::string::npos) return "\"${\" at " + std::to_string(open) + " is not closed by \"}\"";
    if (std::string e = var(pattern.substr(open + 2, close - open - 2)); !e.empty()) return e;
    i = close + 1;
  }
  return "";
}

bool IsLabelKey(const std::string& key) {
  // [prefix/]name: name up to 63 of [A-Za-z0-9._-], alphanumeric at both ends; prefix a DNS name.
  size_t slash = key.find('/');
  std::string name = slash == std::string::npos ? key : key.substr(slash + 1);
  if (slash != std::string::npos && !IsDnsName(key.substr(0, slash), 253)) return false;
  if (name.empty() || name.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  for (char c : name)
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  return alnum(name.front()) && alnum(name.back());
}

std::string CheckVariable(const std::string& v) {
  if (v == ".PVC.namespace" || v == ".PVC.name") return "";
  const std::string labels = ".PVC.labels.";
  if (v.compare(0, labels.size(), labels) == 0) {
    if (IsLabelKey(v.substr(labels.size()))) return "";
    return "\"${" + v + "}\" does not name a valid label key";
  }
  return "unknown variable \"${" + v + "}\" (use ${.PVC.namespace}, ${.PVC.name} or ${.PVC.labels.<key>}; annotations "
         "are not taken)";
}

// The characters a part may hold, and "/" between parts.
bool LiteralOk(const std::string& t) {
  for (char c : t)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '/')) return false;
  return true;
}

}  // namespace

bool IsPatternDir(const std::string& dir) {
  if (dir.empty() || dir.size() > kMaxDir) return false;
  size_t start = 0;
  while (true) {
    size_t slash = dir.find('/', start);
    std::string part = dir.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (!IsDnsName(part, kMaxPart)) return false;
    if (slash == std::string::npos) return true;
    start = slash + 1;
  }
}

std::string ParentDir(const std::string& dir) {
  size_t slash = dir.rfind('/');
  return slash == std::string::npos ? "" : dir.substr(0, slash);
}

std::string LeafName(const std::string& dir) {
  size_t slash = dir.rfind('/');
  return slash == std::string::npos ? dir : dir.substr(slash + 1);
}

std::string VolumeDirOf(const Volume& v) {
  auto named = v.meta.annotations.find(ann::kDirName);
  if (named != v.meta.annotations.end()) return IsPatternDir(named->second) ? named->second : "";
  return v.has_claim_ref ? VolumeDirName(v.claim_ref.namespace_, v.claim_ref.name, v.meta.name) : "";
}

std::string CheckPathPattern(const std::string& pattern, bool shared_across_namespaces) {
  if (pattern.empty()) return "is empty";
  if (pattern.front() == '/') return "starts with \"/\": it is a path inside the root, like ${.PVC.namespace}/${.PVC.name}";
  if (pattern.back() == '/' || pattern.find("//") != std::string::npos) return "has an empty part (\"//\" or a \"/\" at the end)";
  bool any_var = false;
  std::string err = Walk(
      pattern,
      [](const std::string& t) {
        return LiteralOk(t) ? std::string()
                            : "text \"" + t + "\" holds characters other than a-z, 0-9, \"-\", \".\" and \"/\"";
      },
      [&](const std::string& v) {
        any_var = true;
        return CheckVariable(v);
      });
  if (!err.empty()) return err;
  if (!any_var) return "names no variable: every claim would get the same directory";
  // Literal parts ("..", "x..", ".hidden") are caught here: a variable stands for a valid name.
  std::string probe;
  Walk(pattern, [&](const std::string& t) { probe += t; return std::string(); },
       [&](const std::string&) { probe += "x"; return std::string(); });
  if (!IsPatternDir(probe))
    return "makes paths like \"" + probe + "\", whose parts are not all names (a-z, 0-9, \"-\" and \".\", "
           "a letter or digit at each end, no \"..\")";
  const std::string first = pattern.substr(0, pattern.find('/'));
  if (shared_across_namespaces) {
    if (first.find("${") != std::string::npos || first.find('.') == std::string::npos || first.size() == pattern.size())
      return "is shared across namespaces (sharedAcrossNamespaces: \"true\"), so its first part must be plain text with "
             "a \".\" in it, which no namespace's name has (like \"shared.data/${.PVC.labels.app}\"), followed by more "
             "parts: then its directories never meet the folder of a namespace";
    return "";
  }
  if (pattern.compare(0, std::string(kNamespaceFirst).size(), kNamespaceFirst) != 0 ||
      pattern.size() == std::string(kNamespaceFirst).size())
    return "does not start with \"" + std::string(kNamespaceFirst) + "\" and a part after it: claims of different "
           "namespaces could get one directory, or one inside another's (another namespace's kept data). Start it with " +
           kNamespaceFirst + ", like \"${.PVC.namespace}/${.PVC.name}\"; or, if every namespace may reach every "
           "other's data through this class, set sharedAcrossNamespaces: \"true\" and start it with plain text holding "
           "a \".\", like \"shared.data/${.PVC.labels.app}\"";
  return "";
}

Result<std::string> ExpandPathPattern(const std::string& pattern, const Claim& claim) {
  std::string out;
  std::string err = Walk(
      pattern, [&](const std::string& t) { out += t; return std::string(); },
      [&](const std::string& v) {
        if (v == ".PVC.namespace") {
          out += claim.meta.namespace_;
          return std::string();
        }
        if (v == ".PVC.name") {
          out += claim.meta.name;
          return std::string();
        }
        const std::string key = v.substr(std::string(".PVC.labels.").size());
        auto it = claim.meta.labels.find(key);
        if (it == claim.meta.labels.end() || it->second.empty())
          return "the claim has no label " + key + " (pathPattern uses ${" + v + "}): add it";
        if (!IsDnsName(it->second, kMaxPart))
          return "label " + key + "=\"" + it->second + "\" (pathPattern ${" + v + "}) is not a lower-case name "
                 "(a-z, 0-9, \"-\" and \".\", a letter or digit at each end)";
        out += it->second;
        return std::string();
      });
  if (!err.empty()) return Status::Invalid(err);
  if (!IsPatternDir(out))
    return Status::Invalid("pathPattern makes \"" + out + "\" for this claim, which is not a path of names (each part "
                           "a-z, 0-9, \"-\" and \".\", at most 253 bytes, 4096 in all)");
  return out;
}
