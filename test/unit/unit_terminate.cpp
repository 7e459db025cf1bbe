// terminate.hpp: an uncaught exception still says what it was (type and what()) before the
// abort, without libstdc++'s demangling handler.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <stdexcept>
#include <string>

#include "base/terminate.hpp"

namespace {

// An exception leaving a noexcept function ends the process through the terminate handler
// (Catch would catch it otherwise).
void Uncaught(void (*body)()) noexcept { body(); }

// Runs `body` in a child process; its stderr and how it ended.
std::string StderrOf(void (*body)(), int* signal) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::signal(SIGABRT, SIG_DFL);  // Catch's handler would report the abort as the test's failure
    ::dup2(fds[1], 2);
    Uncaught(body);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  *signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  // Under qemu-user (make test-arch) the emulator adds a line of its own about the abort.
  if (size_t q = out.find("qemu: uncaught target signal"); q != std::string::npos) out.erase(q);
  return out;
}

}  // namespace

TEST_CASE("an uncaught exception prints its type and what(), then aborts", "[terminate]") {
  int sig = 0;
  std::string err = StderrOf([] { throw std::runtime_error("the disk is gone"); }, &sig);
  CHECK(sig == SIGABRT);
  CHECK(err == "terminate called after throwing an instance of 'St13runtime_error'\n  what():  the disk is gone\n");
  err = StderrOf([] { throw 42; }, &sig);
  CHECK(sig == SIGABRT);
  CHECK(err == "terminate called after throwing an instance of 'i'\n");
  err = StderrOf([] { std::terminate(); }, &sig);
  CHECK(sig == SIGABRT);
  CHECK(err == "terminate called without an active exception\n");
}
