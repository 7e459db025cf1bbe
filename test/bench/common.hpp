// What every part of the benchmark shares: its sizes, its one error type, and small helpers for
// time, text and figures. The bench uses no code of the provisioner: only its binary, the fake's
// binary and manifests/rbac.yaml (and the test helpers of test/support and test/fake, and base/yaml
// to read the manifests the capacity section creates).
#pragma once
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include <picojson.h>

namespace bench {

constexpr const char* kNs = "default";
extern const std::string kClaims;  // the claims' collection in kNs
constexpr const char* kSaUser = "system:serviceaccount:kube-system:hostpath-provisioner";
constexpr const char* kProvisionerName = "hostpath-provisioner.io/hostpath";
constexpr int kClientThreads = 4;                        // threads that create or delete a burst's claims
constexpr int kBatch = 25;                               // claims per request of theirs (POST /fake/batch)
constexpr int kBaselineThreads = 4;                      // the baseline's, as the provisioner's default WORKERS
constexpr auto kBurstLimit = std::chrono::seconds(120);  // a burst not done by then is a failure

// Something broke: the bench stops and exits 1 with this message.
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Where a run keeps its files: the work folder (build/bench-run, logs and the fakes' folders)
// and the volumes root (a tmpfs by default, see bench_main.cpp).
struct Places {
  std::string work, volumes;
};

int64_t NowNs();  // ns since the epoch (the fake's request log and /fake/wait use the same clock)
void SleepMs(int ms);
std::string Trim(std::string s);  // without trailing white space

// printf-style formatting of one number.
std::string Fmt(const char* f, double v);
// KiB as "N.NN MiB"; "?" for a negative (unknown) value.
std::string MiB(long kib);
// The p-th (0..1) percentile (nearest rank) of v; -1 when v is empty.
double Percentile(std::vector<double> v, double p);
// "p50 / p99 ms" of latencies in ms.
std::string Latency(const std::vector<double>& ms);

// The string at `path` in v; "" if there is none or it is not a string.
std::string Str(const picojson::value& v, std::initializer_list<const char*> path);
// The number at "code" in v; 0 if there is none.
int Code(const picojson::value& v);
// A JSON array of the numbers.
picojson::value Array(const std::vector<double>& v);

// Entries of a directory, "." and ".." not counted; -1 if it cannot be read.
long CountEntries(const std::string& path);
// Creates a directory (it must not exist) and returns its absolute path. Throws Failure.
std::string MakeDir(const std::string& path);
// The 1-minute load average.
double LoadAverage();
// The absolute form of `path` if it resolves, else `path`.
std::string Absolute(const std::string& path);

}  // namespace bench
