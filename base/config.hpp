// Environment variables and flags become one validated Config, once, at start.
// Every setting has a flag, an environment variable and a default; a flag wins over its
// variable. Errors name the flag and the variable.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "base/paths.hpp"  // the rules pv_dir and allowed_pv_dirs are normalised by
#include "base/status.hpp"

inline constexpr const char* kDefaultProvisionerName = "hostpath-provisioner.io/hostpath";
inline constexpr const char* kDefaultPvDir = "/var/kubernetes";
inline constexpr const char* kDefaultServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

struct Config {
  std::string provisioner_name = kDefaultProvisionerName;
  // Node-aware: a second name this program answers to, without "/" so that a CSIDriver may carry
  // it; for classes of this provisioner, each instance publishes its node's free space as
  // CSIStorageCapacity objects, which the scheduler places pods by. "" = none.
  std::string capacity_provisioner_name;
  int capacity_interval_seconds = 10;  // how often the published capacity is checked against the disk
  std::string pv_dir = kDefaultPvDir;    // absolute, normalised, never "/"
  std::vector<std::string> allowed_pv_dirs;  // more roots a class's pvDir may name (normalised)
  std::string node_name;                 // "" = single-node mode; else serve this node only
  int deleted_node_cleanup_seconds = 0;
  int small_cluster_nodes = 8;           // node-aware: up to this many nodes, every instance watches every claim
  bool require_mount = false;            // default of the class parameter requireMount
  bool check_free_space = true;          // default of the class parameter checkFreeSpace
  bool overcommit = true;                // default of the class parameter overcommit
  std::string quota = "false";           // default of the class parameter quota: true, auto or false
  std::string reclaim_policy;            // "", Retain or Delete; "" = the class decides
  unsigned dir_mode = 0777;              // mode of new volume directories
  std::string kubeconfig;                // "" = in-cluster
  std::string serviceaccount_dir = kDefaultServiceAccountDir;
  bool allow_insecure_kubeconfig = false;  // honour insecure-skip-tls-verify
  std::string metrics_address = ":8080";   // "" turns the HTTP endpoint off
  int verbosity = 0;
  std::string log_format = "text";  // text | json
  int resync_seconds = 300;         // periodic pass over the cache; 0 = never
  int workers = 4;                  // claims and volumes handled at once (a slow deletion holds up one)
  int usage_scan_seconds = 60;      // pause between passes of the usage scan (metrics); 0 = no scan
  bool leader_elect = false;        // hold a Lease before acting (for more than one replica)
  std::string leader_elect_namespace;  // "" = the service account's namespace
  int lease_seconds = 30;              // lease duration; renew deadline 2/3 of it, retries every 1/6
  int api_timeout_seconds = 30;        // a request to the API server abandoned (and retried) after this
  bool show_help = false;
  bool show_version = false;

  // Is `provisioner` (a class's provisioner, a PV's provisioned-by) one of this program's names?
  bool Ours(const std::string& provisioner) const {
    return !provisioner.empty() && (provisioner == provisioner_name || provisioner == capacity_provisioner_name);
  }
};

// One row per setting: how it is spelled and documented. The table drives parsing and --help.
struct Setting {
  const char* flag;  // without the leading "--"
  const char* env;   // "" when there is none
  const char* default_text;
  const char* help;
  // Stores a raw value into the config; returns an error message or "".
  std::string (*apply)(Config&, const std::string&);
};

// The table of every setting, in the order --help lists them. Built once; read-only after, so
// safe from any thread.
const std::vector<Setting>& Settings();

// Builds the Config from the environment (through getenv) and then the arguments (without
// argv[0]): a flag wins over its variable, "--flag=value" and "--flag value" both work, and
// --allow-insecure-kubeconfig and --leader-elect need no value. --help and --version set
// show_help and show_version. Returns an Invalid status naming the flag and variable on the
// first bad value, and on an unknown flag, a bare argument, a missing value or settings that
// do not go together (DELETED_NODE_CLEANUP_DELAY without NODE_NAME, LEADER_ELECT with it).
Result<Config> ParseConfig(const std::vector<std::string>& args, const std::function<const char*(const char*)>& getenv);

// Why the configured roots (PV_DIR, ALLOWED_PV_DIRS) cannot be used together: "" when none lies
// inside another (one named twice is fine); else the message naming both settings and paths.
// ParseConfig refuses such a config.
std::string NestedRoots(const Config& c);

// The --help text: usage and one entry per setting with its variable and default.
std::string HelpText();
