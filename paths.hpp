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
