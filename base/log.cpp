// Leveled log lines on stderr: the bodies (log.hpp has the contracts).
#include "base/log.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>

#include "base/text.hpp"

namespace logging {

std::atomic<int>& Verbosity() {
  static std::atomic<int> v{0};
  return v;
}

std::atomic<bool>& Json() {
  static std::atomic<bool> j{false};
  return j;
}

std::string UtcNow(int digits) {
  auto now = std::chrono::system_clock::now();
  std::time_t secs = std::chrono::system_clock::to_time_t(now);
  long us = static_cast<long>(std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[80];
  int n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                        tm.tm_hour, tm.tm_min, tm.tm_sec);
  if (digits == 3) n += std::snprintf(buf + n, sizeof buf - n, ".%03ld", us / 1000);
  if (digits == 6) n += std::snprintf(buf + n, sizeof buf - n, ".%06ld", us);
  std::snprintf(buf + n, sizeof buf - n, "Z");
  return buf;
}

std::string TimestampUtc() { return UtcNow(3); }

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

void Write(Level level, const std::string& text) {
  const std::string msg = ValidUtf8(text);
  static const char* names[] = {"error", "warn", "info", "debug"};
  const char* name = names[static_cast<int>(level)];
  std::string line;
  if (Json()) {
    line = "{\"ts\":\"" + TimestampUtc() + "\",\"level\":\"" + name + "\",\"msg\":\"" + JsonEscape(msg) + "\"}\n";
  } else {
    std::string flat = msg;
    for (char& c : flat)
      if (c == '\n') c = ' ';
    line = TimestampUtc() + " " + name + (level == Level::kInfo || level == Level::kWarn ? "  " : " ") + flat + "\n";
  }
  ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
}

}  // namespace logging
