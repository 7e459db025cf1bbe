// Archive names: the bodies (archive_name.hpp has the contracts). Hand-written: a fixed
// strftime format and its strict reading back, which no library call does in both directions.
// OpenSSL's SHA-256 (a pure function) tells cut names apart.
#include "decide/archive_name.hpp"

#include <ctime>

#include "base/text.hpp"

namespace {

constexpr size_t kTimeLen = 16;  // "20261127T181500Z"
constexpr size_t kDirMax = 200;  // 255 less "--" time "--until-" time "--" and a 4-digit counter
constexpr size_t kHashHex = 16;  // 64 bits of the whole name's SHA-256 end a cut directory part
constexpr int kCounterMax = 9999;

bool Digits(const std::string& s, size_t from, size_t n) {
  if (from + n > s.size()) return false;
  for (size_t i = from; i < from + n; ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

// The seconds of a time ArchiveTime wrote; nothing for anything else (month 13 included: the
// time made again must be the text read).
std::optional<int64_t> ReadTime(const std::string& t) {
  if (t.size() != kTimeLen || t[8] != 'T' || t[15] != 'Z' || !Digits(t, 0, 8) || !Digits(t, 9, 6)) return std::nullopt;
  std::tm tm{};
  tm.tm_year = std::stoi(t.substr(0, 4)) - 1900;
  tm.tm_mon = std::stoi(t.substr(4, 2)) - 1;
  tm.tm_mday = std::stoi(t.substr(6, 2));
  tm.tm_hour = std::stoi(t.substr(9, 2));
  tm.tm_min = std::stoi(t.substr(11, 2));
  tm.tm_sec = std::stoi(t.substr(13, 2));
  const int64_t secs = static_cast<int64_t>(timegm(&tm));
  if (ArchiveTime(secs) != t) return std::nullopt;
  return secs;
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::string ArchiveDirPart(const std::string& dir_name) {
  std::string out = dir_name;
  // Cut: two long names that begin alike must not get one directory part (an event would name
  // the other volume's archive). '~' is in no volume's directory name (DNS names, a pattern's
  // lower-case parts), so a cut part is never an uncut one either.
  if (out.size() > kDirMax) out = out.substr(0, kDirMax - kHashHex - 1) + "~" + Sha256Hex(dir_name, kHashHex);
  for (char& c : out)
    if (c == '/') c = '_';
  return out;
}

std::string ArchiveTime(int64_t seconds) {
  if (seconds < 0 || seconds > 253402300799) return "";  // 9999-12-31T23:59:59Z
  const time_t t = static_cast<time_t>(seconds);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr) return "";
  char buf[32];
  if (std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm) != kTimeLen) return "";
  return buf;
}

std::string ArchivePrefix(const std::string& dir_name) { return ArchiveDirPart(dir_name) + "--"; }

std::string ArchiveName(const std::string& dir_name, int64_t now, int64_t keep_seconds, int counter) {
  std::string name = ArchivePrefix(dir_name) + ArchiveTime(now);
  name += keep_seconds <= 0 ? std::string("--keep") : "--until-" + ArchiveTime(now + keep_seconds);
  if (counter > 1) name += "--" + std::to_string(counter > kCounterMax ? kCounterMax : counter);
  return name;
}

std::optional<ArchiveNameParts> ParseArchiveName(const std::string& name) {
  if (name.size() > kArchiveNameMax) return std::nullopt;
  std::string rest = name;
  // A counter: "--" and up to four digits (a time ends with 'Z', "keep" with 'p').
  const size_t dashes = rest.rfind("--");
  if (dashes != std::string::npos && rest.size() - dashes - 2 >= 1 && rest.size() - dashes - 2 <= 4 &&
      Digits(rest, dashes + 2, rest.size() - dashes - 2)) {
    const int n = std::stoi(rest.substr(dashes + 2));
    if (n < 2 || rest[dashes + 2] == '0') return std::nullopt;
    rest.resize(dashes);
  }
  ArchiveNameParts parts;
  if (EndsWith(rest, "--keep")) {
    parts.keep = true;
    rest.resize(rest.size() - 6);
  } else {
    const size_t tail = 8 + kTimeLen;  // "--until-" time
    if (rest.size() < tail || rest.compare(rest.size() - tail, 8, "--until-") != 0) return std::nullopt;
    std::optional<int64_t> until = ReadTime(rest.substr(rest.size() - kTimeLen));
    if (!until) return std::nullopt;
    parts.expires_at = *until;
    rest.resize(rest.size() - tail);
  }
  const size_t tail = 2 + kTimeLen;  // "--" time
  if (rest.size() <= tail || rest.compare(rest.size() - tail, 2, "--") != 0) return std::nullopt;
  std::optional<int64_t> at = ReadTime(rest.substr(rest.size() - kTimeLen));
  if (!at) return std::nullopt;
  parts.archived_at = *at;
  parts.dir = rest.substr(0, rest.size() - tail);
  return parts;
}

bool ArchiveOf(const std::string& name, const std::string& dir_name) {
  if (name.compare(0, ArchivePrefix(dir_name).size(), ArchivePrefix(dir_name)) != 0) return false;  // cheap first
  std::optional<ArchiveNameParts> parts = ParseArchiveName(name);
  return parts && parts->dir == ArchiveDirPart(dir_name);
}

bool ArchiveExpired(const ArchiveNameParts& parts, int64_t now) { return !parts.keep && now >= parts.expires_at; }

bool ArchiveDue(const ArchiveNameParts& parts, int64_t now, int64_t watched) {
  return ArchiveExpired(parts, now) && watched >= parts.expires_at - parts.archived_at;
}
