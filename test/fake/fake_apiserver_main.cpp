// build/fake-apiserver: the fake Kubernetes API server as a program, for end-to-end tests and
// `make demo`.
//   fake-apiserver --dir DIR [--port N] [--rbac FILE]... [--sa-namespace NS] [--sa-name NAME]
//                  [--history N]
// Writes DIR/{ca.crt,admin.kubeconfig,provisioner.kubeconfig,serviceaccount/*,port}, prints
// "fake-apiserver ready https://127.0.0.1:PORT" and serves until SIGTERM or SIGINT (exit 0).
// Exit 2: bad arguments; exit 1: could not start.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "test/fake/fake_apiserver.hpp"

namespace {

const char* kUsage =
    "usage: fake-apiserver --dir DIR [--port N] [--rbac FILE]... [--sa-namespace NS] [--sa-name NAME] [--history N]\n";

// Fills opts from argv; returns an error message or "".
std::string ParseArgs(int argc, char** argv, fake::ApiServerOptions& opts) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    if (size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return flag + " needs a value";
    }
    if (flag == "--dir") {
      opts.dir = value;
    } else if (flag == "--port") {
      char* end = nullptr;
      long p = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || p < 0 || p > 65535) return "--port must be 0-65535, not \"" + value + "\"";
      opts.port = static_cast<int>(p);
    } else if (flag == "--rbac") {
      opts.rbac_files.push_back(value);
    } else if (flag == "--sa-namespace") {
      opts.sa_namespace = value;
    } else if (flag == "--sa-name") {
      opts.sa_name = value;
    } else if (flag == "--history") {
      long n = std::atol(value.c_str());
      if (n < 1) return "--history must be a positive number, not \"" + value + "\"";
      opts.history = static_cast<size_t>(n);
    } else {
      return "unknown flag " + flag;
    }
  }
  if (opts.dir.empty()) return "--dir is required";
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  fake::ApiServerOptions opts;
  if (std::string err = ParseArgs(argc, argv, opts); !err.empty()) {
    std::fprintf(stderr, "fake-apiserver: %s\n%s", err.c_str(), kUsage);
    return 2;
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts: all inherit it
  signal(SIGPIPE, SIG_IGN);

  fake::ApiServer server(opts);
  Status s = server.Start();
  if (!s.ok()) {
    std::fprintf(stderr, "fake-apiserver: %s\n", s.message().c_str());
    return 1;
  }
  std::printf("fake-apiserver ready %s\n", server.url().c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&signals, &sig);
  server.Stop();
  return 0;
}
