// Lexical path handling shared by the configuration and the filesystem code (no I/O).
#pragma once
#include <string>

// Lexically normalises an absolute path into *out: collapses "//" and "/./" and drops a
// trailing "/". Returns false (and leaves *out alone) when the path is empty, relative,
// contains a NUL byte or has any ".." component (refused rather than resolved).
inline bool NormaliseAbsolute(const std::string& path, std::string* out) {
  if (path.empty() || path[0] != '/' || path.find('\0') != std::string::npos) return false;
  std::string result;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string part = path.substr(i, j - i);
    i = j + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") return false;
    result += "/" + part;
  }
  *out = result.empty() ? "/" : result;
  return true;
}

// Is `path` the directory `dir` or inside it, lexically? (`dir` normalised; `path` is
// normalised first, and one that cannot be is not inside anything.)
inline bool PathWithin(const std::string& path, const std::string& dir) {
  std::string p;
  if (!NormaliseAbsolute(path, &p)) return false;
  return p == dir || (p.size() > dir.size() && p.compare(0, dir.size(), dir) == 0 && (dir == "/" || p[dir.size()] == '/'));
}

// A DNS-1123 label/subdomain as the API server enforces for namespaces and claim names:
// lowercase letters, digits, '-' and '.', starting and ending alphanumeric. Checked again where a name
// becomes part of a path.
inline bool IsDnsName(const std::string& s, size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  return alnum(s.front()) && alnum(s.back()) && s.find("..") == std::string::npos;
}
