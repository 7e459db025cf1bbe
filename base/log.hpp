// Leveled log lines on stderr: one line per meaningful event, UTC RFC 3339 timestamps,
// text ("2026-11-21T22:10:00.123Z info  provisioned default/data -> pvc-1 (3.1 ms)") or
// JSON ({"ts":"...","level":"info","msg":"..."}) for log collectors.
// Lines are valid UTF-8 (bytes that are not become U+FFFD). Thread-safe: each line is written
// with one write(2).
#pragma once
#include <atomic>
#include <string>

#include "base/text.hpp"  // the helpers callers build their lines with (Or, OneLine, HumanBytes)

namespace logging {

enum class Level { kError, kWarn, kInfo, kDebug };

// The process-wide settings, set once at start (main.cpp) and read by every line: the
// verbosity of debug lines (--v) and whether lines are JSON (--log-format json).
std::atomic<int>& Verbosity();
std::atomic<bool>& Json();

// Now in UTC, RFC 3339, with `digits` (0, 3 or 6) digits of fractional seconds:
// "2026-11-21T22:10:00Z", "...00.123Z" (log lines), "...00.123456Z" (metav1.MicroTime).
std::string UtcNow(int digits);

// Now as a log line's timestamp: UtcNow(3).
std::string TimestampUtc();

// `s` as the inside of a JSON string: '"', '\\' and control characters escaped; other bytes
// as they are.
std::string JsonEscape(const std::string& s);

// Writes one line of `level` to stderr (fd 2) with one write(2): text with newlines made
// spaces, or JSON. A failed write is ignored.
void Write(Level level, const std::string& text);

}  // namespace logging

inline void LogError(const std::string& msg) { logging::Write(logging::Level::kError, msg); }
inline void LogWarn(const std::string& msg) { logging::Write(logging::Level::kWarn, msg); }
inline void LogInfo(const std::string& msg) { logging::Write(logging::Level::kInfo, msg); }
// Debug lines appear when the verbosity (--v) is at least `v` (1 or more).
inline bool LogEnabled(int v) { return logging::Verbosity() >= v; }
inline void LogDebug(int v, const std::string& msg) {
  if (LogEnabled(v)) logging::Write(logging::Level::kDebug, msg);
}
