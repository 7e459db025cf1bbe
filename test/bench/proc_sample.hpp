// What the bench reads about a process from /proc: its memory, its CPU time (the scheduler's
// nanoseconds in each thread's schedstat, finer than the clock ticks of stat) and its threads'
// wake-ups.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace bench {

struct Memory {
  long rss_kib = -1;   // VmRSS: resident
  long anon_kib = -1;  // RssAnon: private memory (heap, stacks), what more objects cost
};
// -1 fields when the process is gone.
Memory ReadMemory(pid_t pid);

// Calls f with the /proc directory of each of the process's threads.
void ForEachTask(pid_t pid, const std::function<void(const std::string&)>& f);

// CPU seconds of the process's threads; with `name_prefix`, only of threads whose name (comm)
// starts with it.
double CpuSeconds(pid_t pid, const std::string& name_prefix = "");
// The processes' CPU seconds, summed.
double CpuSeconds(const std::vector<pid_t>& pids);

// Context switches (voluntary and not) of each thread, by thread id and whether it sleeps in a
// read or a poll now (a watch stream waiting for its next line; the provisioner's other threads
// wait on a condition variable, a signal or accept()).
std::map<std::pair<std::string, bool>, long> WakeUps(pid_t pid);

// Waits until the processes together have used no CPU for `quiet` (every key looked at), at
// most 60 s (then returns anyway).
void WaitCpuQuiet(const std::vector<pid_t>& pids, std::chrono::milliseconds quiet);
inline void WaitCpuQuiet(pid_t pid, std::chrono::milliseconds quiet) { WaitCpuQuiet(std::vector<pid_t>{pid}, quiet); }

}  // namespace bench
