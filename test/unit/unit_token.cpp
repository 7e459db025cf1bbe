// TokenSource (api_connection.hpp): the bearer token from a file that kubelet rewrites as tokens rotate.
// The file is looked at most once a second, at once after a 401 (Invalidate), and at once
// while no token has been read.
#include <stdio.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "kube/api_connection.hpp"

namespace {

struct TokenDir {
  TokenDir() {
    char tmpl[] = "/tmp/hp-token-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TokenDir() {
    std::remove(file().c_str());
    rmdir(path.c_str());
  }
  std::string file() const { return path + "/token"; }
  // As kubelet does: a new file renamed over the old one.
  void Write(const std::string& token) const {
    std::ofstream(path + "/new") << token;
    REQUIRE(std::rename((path + "/new").c_str(), file().c_str()) == 0);
  }
  std::string path;
};

}  // namespace

TEST_CASE("TokenSource: reads the file, without the trailing newline", "[token]") {
  TokenDir dir;
  dir.Write("first-token\n");
  TokenSource src("", dir.file());
  CHECK(src.Get() == "first-token");
}

TEST_CASE("TokenSource: a rewritten file is seen after a second, or at once after a 401", "[token]") {
  TokenDir dir;
  dir.Write("first");
  TokenSource src("", dir.file());
  REQUIRE(src.Get() == "first");
  dir.Write("second");
  CHECK(src.Get() == "first");  // looked at less than a second ago
  src.Invalidate();             // the server said 401
  CHECK(src.Get() == "second");
  dir.Write("third");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  CHECK(src.Get() == "third");
}

TEST_CASE("TokenSource: while the file is missing, every Get looks for it", "[token]") {
  TokenDir dir;
  TokenSource src("", dir.file());
  CHECK(src.Get().empty());
  dir.Write("late");
  CHECK(src.Get() == "late");
}
