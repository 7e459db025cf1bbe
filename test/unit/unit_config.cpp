// Environment + flags -> Config: defaults, precedence, and values that must be refused.
#include <catch2/catch.hpp>

#include <map>

#include "base/config.hpp"

namespace {

Result<Config> Parse(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  return ParseConfig(args, [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

TEST_CASE("defaults are the documented ones", "[config]") {
  Result<Config> c = Parse({});
  REQUIRE(c.ok());
  CHECK(c->pv_dir == "/var/kubernetes");
  CHECK(c->reclaim_policy.empty());
  CHECK(c->provisioner_name == "hostpath-provisioner.io/hostpath");
  CHECK(c->dir_mode == 0777);
  CHECK(c->metrics_address == ":8080");
  for (const char* ok : {"", ":9090", "127.0.0.1:8080", "[::1]:8080"})
    CHECK(Parse({std::string("--metrics-address=") + ok}).ok());
  CHECK(c->serviceaccount_dir == "/var/run/secrets/kubernetes.io/serviceaccount");
}

TEST_CASE("environment variables set values and flags win over them", "[config]") {
  Result<Config> c = Parse({"--pv-dir", "/data/pv", "--reclaim-policy=Delete"},
                           {{"PV_DIR", "/srv/k8s"}, {"PV_RECLAIM_POLICY", "Retain"}, {"PROVISIONER_NAME", "example.com/hp"},
                            {"PV_DIR_MODE", "0775"}});
  REQUIRE(c.ok());
  CHECK(c->pv_dir == "/data/pv");
  CHECK(c->reclaim_policy == "Delete");
  CHECK(c->provisioner_name == "example.com/hp");
  CHECK(c->dir_mode == 0775);
}

TEST_CASE("PV_DIR is normalised", "[config]") {
  struct Row {
    const char* in;
    const char* out;
  } rows[] = {{"/var/kubernetes/", "/var/kubernetes"}, {"//srv//pv/./", "/srv/pv"}, {"/a", "/a"}};
  for (const Row& r : rows) {
    Result<Config> c = Parse({}, {{"PV_DIR", r.in}});
    INFO(r.in);
    REQUIRE(c.ok());
    CHECK(c->pv_dir == r.out);
  }
}

TEST_CASE("bad values are refused with a message naming the setting", "[config]") {
  struct Row {
    const char* name;
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    const char* says;
  } rows[] = {
      {"reclaim policy", {}, {{"PV_RECLAIM_POLICY", "Recycle"}}, "PV_RECLAIM_POLICY (--reclaim-policy) must be Retain or Delete"},
      {"reclaim flag", {"--reclaim-policy", "delete"}, {}, "--reclaim-policy (PV_RECLAIM_POLICY) must be Retain or Delete"},
      {"root dir", {}, {{"PV_DIR", "/"}}, "PV_DIR (--pv-dir) must not be \"/\""},
      {"root via dots", {}, {{"PV_DIR", "//./"}}, "must not be \"/\""},
      {"relative dir", {"--pv-dir=data"}, {}, "must be an absolute path"},
      {"dotdot dir", {"--pv-dir=/var/../etc"}, {}, "without \"..\""},
      {"mode", {"--dir-mode=0999"}, {}, "must be an octal mode"},
      {"setuid mode", {"--dir-mode=4777"}, {}, "must not set the set-user-ID bit"},
      {"unknown flag", {"--pv-path=/x"}, {}, "unknown flag --pv-path"},
      {"missing value", {"--pv-dir"}, {}, "--pv-dir needs a value"},
      {"stray argument", {"run"}, {}, "unexpected argument \"run\""},
      {"log format", {"--log-format=xml"}, {}, "must be text or json"},
      {"verbosity", {"--v=x"}, {}, "must be a whole number"},
      {"metrics port with junk", {"--metrics-address=:80abc"}, {}, "--metrics-address (METRICS_ADDRESS) must be host:port"},
      {"metrics without port", {}, {{"METRICS_ADDRESS", "localhost"}}, "METRICS_ADDRESS (--metrics-address) must be host:port"},
      {"metrics port 0", {"--metrics-address=127.0.0.1:0"}, {}, "port from 1 to 65535"},
      {"metrics port too big", {"--metrics-address=:65536"}, {}, "port from 1 to 65535"},
  };
  for (const Row& r : rows) {
    Result<Config> c = Parse(r.args, r.env);
    INFO(r.name);
    REQUIRE_FALSE(c.ok());
    CHECK_THAT(c.status().message(), Catch::Contains(r.says));
  }
}

TEST_CASE("USAGE_SCAN_INTERVAL: seconds between usage scans, 0 for none", "[config][usage]") {
  CHECK(Parse({}).value().usage_scan_seconds == 60);  // as kubelet's --volume-stats-agg-period
  CHECK(Parse({}, {{"USAGE_SCAN_INTERVAL", "0"}}).value().usage_scan_seconds == 0);
  CHECK(Parse({"--usage-scan-interval=300"}, {{"USAGE_SCAN_INTERVAL", "5"}}).value().usage_scan_seconds == 300);
  struct Row {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    const char* says;
  } bad[] = {
      {{}, {{"USAGE_SCAN_INTERVAL", "1m"}}, "USAGE_SCAN_INTERVAL (--usage-scan-interval) must be a whole number from 0 to 86400, not \"1m\""},
      {{}, {{"USAGE_SCAN_INTERVAL", "-1"}}, "must be a whole number from 0 to 86400"},
      {{"--usage-scan-interval=86401"}, {}, "--usage-scan-interval (USAGE_SCAN_INTERVAL) must be a whole number from 0 to 86400"},
      {{"--usage-scan-interval="}, {}, "not \"\""},
  };
  for (const Row& r : bad) {
    INFO(r.says);
    Result<Config> got = Parse(r.args, r.env);
    REQUIRE_FALSE(got.ok());
    CHECK_THAT(got.status().message(), Catch::Contains(r.says));
  }
}

TEST_CASE("--help lists every setting with its variable and default", "[config]") {
  std::string help = HelpText();
  for (const Setting& s : Settings()) {
    CHECK_THAT(help, Catch::Contains(std::string("--") + s.flag));
    if (*s.env) CHECK_THAT(help, Catch::Contains(std::string("$") + s.env));
    CHECK_THAT(help, Catch::Contains(s.default_text));
  }
  Result<Config> c = Parse({"--help"});
  REQUIRE(c.ok());
  CHECK(c->show_help);
}

TEST_CASE("NODE_NAME and ALLOWED_PV_DIRS", "[config][node]") {
  Result<Config> c = Parse({}, {{"NODE_NAME", "worker-1.lan"}, {"ALLOWED_PV_DIRS", "/mnt/ssd,/mnt/hdd/,/srv//pv"}});
  REQUIRE(c.ok());
  CHECK(c->node_name == "worker-1.lan");
  CHECK(c->allowed_pv_dirs == std::vector<std::string>{"/mnt/ssd", "/mnt/hdd", "/srv/pv"});
  CHECK(Parse({}).value().node_name.empty());
  CHECK(Parse({}).value().deleted_node_cleanup_seconds == 0);
  CHECK(Parse({}).value().check_free_space);
  CHECK(Parse({}).value().overcommit);
  CHECK_FALSE(Parse({}, {{"OVERCOMMIT", "false"}}).value().overcommit);
  CHECK(Parse({}).value().quota == "false");
  CHECK(Parse({}, {{"QUOTA", "auto"}}).value().quota == "auto");
  CHECK(Parse({"--quota=true"}).value().quota == "true");
  CHECK_FALSE(Parse({"--check-free-space=false"}).value().check_free_space);
  CHECK(Parse({}, {{"NODE_NAME", "n1"}, {"DELETED_NODE_CLEANUP_DELAY", "600"}}).value().deleted_node_cleanup_seconds == 600);
  CHECK(Parse({}, {{"ALLOWED_PV_DIRS", ""}}).value().allowed_pv_dirs.empty());
  // PV_DIR named again, and a sibling whose name only starts like it: no nesting.
  CHECK(Parse({}, {{"ALLOWED_PV_DIRS", "/var/kubernetes,/var/kubernetes-fast,/mnt/a,/mnt/ab"}}).ok());
  struct Row {
    std::map<std::string, std::string> env;
    const char* says;
  } bad[] = {
      {{{"NODE_NAME", "Worker_1"}}, "NODE_NAME (--node-name) must be a node name"},
      {{{"QUOTA", "on"}}, "QUOTA (--quota) must be true, auto or false, not \"on\""},
      {{{"NODE_NAME", "a/b"}}, "must be a node name"},
      {{{"ALLOWED_PV_DIRS", "/mnt/ssd,relative"}}, "ALLOWED_PV_DIRS (--allowed-pv-dirs) must list absolute paths"},
      {{{"ALLOWED_PV_DIRS", "/mnt/../etc"}}, "must list absolute paths"},
      {{{"ALLOWED_PV_DIRS", "/"}}, "other than \"/\""},
      {{{"ALLOWED_PV_DIRS", "/a,,/b"}}, "not \"\""},
      {{{"NODE_NAME", "n1"}, {"LEADER_ELECT", "true"}}, "cannot be used with NODE_NAME"},
      {{{"DELETED_NODE_CLEANUP_DELAY", "600"}}, "needs NODE_NAME"},
      {{{"NODE_NAME", "n1"}, {"DELETED_NODE_CLEANUP_DELAY", "10m"}}, "DELETED_NODE_CLEANUP_DELAY (--deleted-node-cleanup-delay) must be a whole number"},
      // Roots inside roots: a disk mounted below PV_DIR, or two allowed roots one in the other.
      {{{"ALLOWED_PV_DIRS", "/mnt/ssd,/var/kubernetes/fast"}},
       "ALLOWED_PV_DIRS (--allowed-pv-dirs) /var/kubernetes/fast is inside PV_DIR (--pv-dir) /var/kubernetes: roots must not nest"},
      {{{"PV_DIR", "/srv/pv/inner"}, {"ALLOWED_PV_DIRS", "/srv/pv"}},
       "PV_DIR (--pv-dir) /srv/pv/inner is inside ALLOWED_PV_DIRS (--allowed-pv-dirs) /srv/pv"},
      {{{"ALLOWED_PV_DIRS", "/mnt/a,/mnt/a/b/"}}, "/mnt/a/b is inside ALLOWED_PV_DIRS (--allowed-pv-dirs) /mnt/a"},
  };
  for (const Row& r : bad) {
    INFO(r.says);
    Result<Config> got = Parse({}, r.env);
    REQUIRE_FALSE(got.ok());
    CHECK_THAT(got.status().message(), Catch::Contains(r.says));
  }
}
