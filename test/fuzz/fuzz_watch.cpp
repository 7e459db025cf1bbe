// libFuzzer target: watch-stream framing. The input is
//   [limit byte] [count byte] [count chunk-size bytes] [stream bytes...]
// The stream is fed to a WatchLineSplitter in chunks of the chosen sizes (cycled; a size byte
// of 0 feeds an empty chunk; all zero counts as 1), and the lines it gives must be exactly those of a reference
// split of the whole stream: non-empty lines in order, and a failure, for good, as soon as
// one line (complete or not) is longer than the limit. Each line then goes to
// ParseWatchEvent, whose accepted events must have a type (and an ERROR a valid HTTP code or 0).
// Build and run with `make fuzz` (mk/fuzz.mk).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kube/k8s_json.hpp"

namespace {

void Require(bool ok, const char* what, const std::string& detail = "") {
  if (ok) return;
  std::fprintf(stderr, "fuzz_watch: property failed: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// What a correct splitter gives for the whole stream at once.
struct Expected {
  std::vector<std::string> lines;  // non-empty complete lines before any over-long one
  bool fails = false;              // some line (or the unfinished tail) is over the limit
  size_t pending = 0;              // bytes after the last "\n" when it does not fail
};

Expected ReferenceSplit(const std::string& stream, size_t limit) {
  Expected out;
  size_t start = 0;
  for (;;) {
    const size_t nl = stream.find('\n', start);
    const size_t end = nl == std::string::npos ? stream.size() : nl;
    if (end - start > limit) {
      out.fails = true;
      return out;
    }
    if (nl == std::string::npos) {
      out.pending = end - start;
      return out;
    }
    if (end > start) out.lines.push_back(stream.substr(start, end - start));
    start = nl + 1;
  }
}

void CheckEvent(const std::string& line) {
  Result<WatchEvent<Claim>> ev = ParseWatchEvent<Claim>(line);
  if (!ev.ok()) return;
  Require(!ev->type.empty(), "accepted watch event without a type", line);
  if (ev->type == "ERROR") Require(ev->code == 0 || (ev->code >= 100 && ev->code <= 599), "ERROR code out of range", line);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  // A small limit (1..255) to reach the over-long path, or 0 for the default 16 MiB.
  const size_t limit = data[0] == 0 ? size_t{16} << 20 : data[0];
  const size_t count = data[1] % 8 + 1;
  if (size < 2 + count) return 0;
  std::vector<uint8_t> sizes(data + 2, data + 2 + count);
  if (std::all_of(sizes.begin(), sizes.end(), [](uint8_t b) { return b == 0; })) sizes[0] = 1;  // progress
  const std::string stream(reinterpret_cast<const char*>(data) + 2 + count, size - 2 - count);

  WatchLineSplitter splitter(limit);
  std::vector<std::string> got;
  auto collect = [&](const std::string& line) { got.push_back(line); };
  bool failed = false;
  size_t at = 0;
  for (size_t k = 0; at < stream.size() || k == 0; ++k) {
    const size_t n = std::min<size_t>(sizes[k % count], stream.size() - at);
    Status s = splitter.Feed(stream.data() + at, n, collect);
    at += n;
    if (!s.ok()) {
      Require(s.code() == Status::kInvalid, "splitter failed with a code other than kInvalid", s.message());
      failed = true;
      break;
    }
  }
  if (failed) {
    const size_t lines_before = got.size();
    Require(!splitter.Feed("x\n", 2, collect).ok(), "splitter works again after failing");
    Require(got.size() == lines_before, "splitter gave a line after failing");
  }

  const Expected want = ReferenceSplit(stream, limit);
  Require(failed == want.fails, failed ? "splitter failed on a stream within the limit" : "splitter missed an over-long line");
  Require(got == want.lines, "splitter lines differ from the reference split");
  if (!failed) Require(splitter.pending() == want.pending, "pending() is not the unfinished tail");
  for (const std::string& line : got) CheckEvent(line);
  return 0;
}
