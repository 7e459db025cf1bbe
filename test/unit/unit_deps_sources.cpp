// scripts/deps.sh fetches cpp-httplib's source package from the mirrors the machine's own apt
// sources name: the deb-src entries it derives from sample sources lists in both formats (run
// as `scripts/deps.sh --deb-src` with APT_ETC pointing at them), and its message when there is
// no Debian source.
#include <catch2/catch.hpp>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <map>
#include <string>

#include "test/support/harness.hpp"

using harness::TempDir;
using harness::WriteFile;

namespace {

struct Run {
  int status;
  std::string out;  // stdout and stderr
};

Run Shell(const std::string& command) {
  Run r{-1, ""};
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = ::pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// An apt etc folder holding `files` (paths relative to it).
std::string AptEtc(const TempDir& tmp, const std::map<std::string, std::string>& files) {
  const std::string etc = tmp.path() + "/apt";
  ::mkdir(etc.c_str(), 0755);
  ::mkdir((etc + "/sources.list.d").c_str(), 0755);
  for (const auto& f : files) WriteFile(etc + "/" + f.first, f.second);
  return etc;
}

const char* kOneLine = R"(# a comment naming deb http://commented.example/debian bookworm main
deb http://mirror.example/debian bookworm main contrib   # a trailing comment
  deb   [ arch=amd64 signed-by=/usr/share/keyrings/k.gpg ]   http://mirror.example/debian bookworm-updates main
#deb http://off.example/debian bookworm main
deb-src http://src-only.example/debian bookworm main
deb http://mirror.example/debian bookworm non-free
deb [trusted=yes] https://vendor.example/apt bookworm stable
deb http://old.example/debian bullseye main
deb http://mirror.example/debian bookworm main
)";

const char* kDeb822 = R"(# one stanza, several URIs and suites
Types: deb deb-src
URIs: http://proxy.example:3142/debian
 https://mirror.example/debian
Suites: bookworm
  bookworm-updates
Components: main non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
# a comment inside a stanza
uris: http://proxy.example:3142/debian-security
suites: bookworm-security
components: main
trusted: yes

Types: deb
URIs: http://disabled.example/debian
Suites: bookworm
Components: main
Enabled: no

Types: deb-src
URIs: http://src-only.example/debian
Suites: bookworm
Components: main

Types: deb
URIs: http://inline-key.example/debian
Suites: bookworm
Components: main
Signed-By:
 -----BEGIN PGP PUBLIC KEY BLOCK-----
 .
 mDMEZ
 -----END PGP PUBLIC KEY BLOCK-----

Types: deb
URIs: https://vendor.example/node
Suites: nodistro
Components: main
)";

}  // namespace

TEST_CASE("deps.sh derives deb-src entries from the machine's apt sources, in both formats", "[unit]") {
  struct Case {
    const char* name;
    std::map<std::string, std::string> files;
    std::string want;
  };
  const Case cases[] = {
      {"one-line sources.list: this release's suites with main, options kept, comments and others skipped",
       {{"sources.list", kOneLine}},
       "deb-src http://mirror.example/debian bookworm main\n"
       "deb-src [ arch=amd64 signed-by=/usr/share/keyrings/k.gpg ] http://mirror.example/debian bookworm-updates main\n"},
      {"deb822 .sources: every URI with every suite, Signed-By file and Trusted kept, inline key and disabled skipped",
       {{"sources.list.d/debian.sources", kDeb822}},
       "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://proxy.example:3142/debian bookworm main\n"
       "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://proxy.example:3142/debian bookworm-updates main\n"
       "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] https://mirror.example/debian bookworm main\n"
       "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] https://mirror.example/debian bookworm-updates main\n"
       "deb-src [trusted=yes] http://proxy.example:3142/debian-security bookworm-security main\n"
       "deb-src http://inline-key.example/debian bookworm main\n"},
      {".list files in sources.list.d count; other names there do not",
       {{"sources.list.d/local.list", "deb http://local.example/debian bookworm-security main\n"},
        {"sources.list.d/old.list.disabled", "deb http://disabled.example/debian bookworm main\n"},
        {"sources.list.d/old.sources.save", "Types: deb\nURIs: http://disabled.example/debian\nSuites: bookworm\nComponents: main\n"}},
       "deb-src http://local.example/debian bookworm-security main\n"},
      {"no Debian source: nothing", {{"sources.list", "deb http://old.example/debian bullseye main\n"}}, ""},
      {"no sources at all: nothing", {}, ""},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      TempDir tmp;
      const std::string etc = AptEtc(tmp, c.files);
      Run r = Shell("APT_ETC='" + etc + "' DEBIAN_CODENAME=bookworm bash scripts/deps.sh --deb-src");
      CHECK(r.status == 0);
      CHECK(r.out == c.want);
    }
  }
}

TEST_CASE("deps.sh without a Debian source stops and says what is missing", "[unit]") {
  TempDir tmp;
  const std::string etc = AptEtc(tmp, {{"sources.list", "deb https://vendor.example/apt nodistro main\n"}});
  Run r = Shell("APT_ETC='" + etc + "' DEBIAN_CODENAME=bookworm bash scripts/deps.sh '" + tmp.path() + "/build'");
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Catch::Contains("deps: no Debian source in " + etc + "/sources.list or sources.list.d/"));
  CHECK_FALSE(harness::Exists(tmp.path() + "/build/httplib/httplib.h"));
}
