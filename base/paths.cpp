// Lexical path handling: the bodies (paths.hpp has the contracts). Hand-written: std::filesystem's
// lexically_normal resolves ".." where these refuse it.
#include "base/paths.hpp"

bool NormaliseAbsolute(const std::string& path, std::string* out) {
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

bool PathWithin(const std::string& path, const std::string& dir) {
  std::string p;
  if (!NormaliseAbsolute(path, &p)) return false;
  return p == dir || (p.size() > dir.size() && p.compare(0, dir.size(), dir) == 0 && (dir == "/" || p[dir.size()] == '/'));
}

bool IsDnsName(const std::string& s, size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  return alnum(s.front()) && alnum(s.back()) && s.find("..") == std::string::npos;
}
