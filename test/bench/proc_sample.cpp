// The bodies of proc_sample.hpp (the contracts are there). Hand-written: /proc is read as the
// kernel documents it (proc(5)); no library is needed for a few fields.
#include "test/bench/proc_sample.hpp"

#include <dirent.h>
#include <sys/syscall.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "test/support/harness.hpp"

namespace bench {
namespace {

using harness::ReadFile;

// The number in a "Name:  value" line of a /proc status file; -1 if there is none.
long StatusField(const std::string& text, const std::string& name) {
  size_t at = text.find("\n" + name + ":");
  return at == std::string::npos ? -1 : std::atol(text.c_str() + at + name.size() + 2);
}

bool InReadOrPoll(const std::string& task) {
  long nr = std::atol(ReadFile(task + "/syscall").c_str());
  for (long read_or_poll : {long{SYS_read}, long{SYS_recvfrom}, long{SYS_recvmsg}, long{SYS_ppoll}, long{SYS_pselect6},
                            long{SYS_epoll_pwait},
#ifdef SYS_poll
                            long{SYS_poll}, long{SYS_select}, long{SYS_epoll_wait},
#endif
                           })
    if (nr == read_or_poll) return true;
  return false;
}

}  // namespace

Memory ReadMemory(pid_t pid) {
  std::string s = ReadFile("/proc/" + std::to_string(pid) + "/status");
  return {StatusField(s, "VmRSS"), StatusField(s, "RssAnon")};
}

void ForEachTask(pid_t pid, const std::function<void(const std::string&)>& f) {
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') f(dir + "/" + e->d_name);
  ::closedir(d);
}

double CpuSeconds(pid_t pid, const std::string& name_prefix) {
  double sum = 0;
  ForEachTask(pid, [&](const std::string& task) {
    if (name_prefix.empty() || ReadFile(task + "/comm").rfind(name_prefix, 0) == 0)
      sum += std::atof(ReadFile(task + "/schedstat").c_str()) / 1e9;
  });
  return sum;
}

double CpuSeconds(const std::vector<pid_t>& pids) {
  double sum = 0;
  for (pid_t pid : pids) sum += CpuSeconds(pid);
  return sum;
}

std::map<std::pair<std::string, bool>, long> WakeUps(pid_t pid) {
  std::map<std::pair<std::string, bool>, long> out;
  ForEachTask(pid, [&](const std::string& task) {
    std::string s = ReadFile(task + "/status");
    out[{task.substr(task.rfind('/') + 1), InReadOrPoll(task)}] =
        std::max(0L, StatusField(s, "voluntary_ctxt_switches")) + std::max(0L, StatusField(s, "nonvoluntary_ctxt_switches"));
  });
  return out;
}

void WaitCpuQuiet(const std::vector<pid_t>& pids, std::chrono::milliseconds quiet) {
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60), since = std::chrono::steady_clock::now();
  double last = CpuSeconds(pids);
  while (std::chrono::steady_clock::now() < end && std::chrono::steady_clock::now() - since < quiet) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    double now = CpuSeconds(pids);
    if (now - last > 1e-4) since = std::chrono::steady_clock::now();
    last = now;
  }
}

}  // namespace bench
