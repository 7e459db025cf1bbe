// The bodies of common.hpp (the contracts are there).
#include "test/bench/common.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "test/support/harness.hpp"

namespace bench {

const std::string kClaims = std::string("/api/v1/namespaces/") + kNs + "/persistentvolumeclaims";

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void SleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string MiB(long kib) { return kib < 0 ? "?" : Fmt("%.2f MiB", static_cast<double>(kib) / 1024.0); }

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

std::string Latency(const std::vector<double>& ms) {
  return Fmt("%.2f", Percentile(ms, 0.5)) + Fmt(" / %.2f ms", Percentile(ms, 0.99));
}

std::string Str(const picojson::value& v, std::initializer_list<const char*> path) {
  const picojson::value* cur = &v;
  for (const char* k : path) {
    if (!cur->is<picojson::object>() || !cur->contains(k)) return "";
    cur = &cur->get(k);
  }
  return cur->is<std::string>() ? cur->get<std::string>() : "";
}

int Code(const picojson::value& v) { return v.get("code").is<double>() ? static_cast<int>(v.get("code").get<double>()) : 0; }

picojson::value Array(const std::vector<double>& v) {
  picojson::array a;
  for (double x : v) a.push_back(picojson::value(x));
  return picojson::value(a);
}

long CountEntries(const std::string& path) {
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) return -1;
  long n = 0;
  while (dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) ++n;
  ::closedir(d);
  return n;
}

std::string MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0) throw Failure("cannot create " + path);
  char abs[PATH_MAX];
  if (::realpath(path.c_str(), abs) == nullptr) throw Failure("cannot resolve " + path);
  return abs;
}

double LoadAverage() { return std::atof(harness::ReadFile("/proc/loadavg").c_str()); }

std::string Absolute(const std::string& path) {
  char abs[PATH_MAX];
  return ::realpath(path.c_str(), abs) ? abs : path;
}

}  // namespace bench
