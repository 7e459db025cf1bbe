// The one Catch2 main shared by every test binary. SIGPIPE is ignored, as the provisioner's main
// ignores it: a peer closing a connection during a write is an error to handle, not the end of
// the process (unit_informer was killed by it now and then).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <csignal>

int main(int argc, char* argv[]) {
  std::signal(SIGPIPE, SIG_IGN);
  return Catch::Session().run(argc, argv);
}
