// Environment variables and flags become one validated Config: the bodies (config.hpp has the
// contracts). Hand-written: getopt_long knows no environment variables, and the table also
// drives --help and the README's check (unit_config).
#include "base/config.hpp"

#include <algorithm>
#include <cstdlib>

namespace {

std::string ParseBool(const std::string& v, bool& out) {
  if (v == "" || v == "true" || v == "1" || v == "yes") { out = true; return ""; }
  if (v == "false" || v == "0" || v == "no") { out = false; return ""; }
  return "must be true or false, not \"" + v + "\"";
}

std::string ParseInt(const std::string& v, int lo, int hi, int& out) {
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < lo || n > hi)
    return "must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) + ", not \"" + v + "\"";
  out = static_cast<int>(n);
  return "";
}

}  // namespace

const std::vector<Setting>& Settings() {
  static const std::vector<Setting> table = {
      {"pv-dir", "PV_DIR", kDefaultPvDir,
       "host directory under which volume directories are made (the same path inside the pod)",
       [](Config& c, const std::string& v) -> std::string {
         std::string n;
         if (!NormaliseAbsolute(v, &n)) return "must be an absolute path without \"..\", not \"" + v + "\"";
         if (n == "/") return "must not be \"/\": volumes would be made in, and removed from, the host's root";
         c.pv_dir = n;
         return "";
       }},
      {"allowed-pv-dirs", "ALLOWED_PV_DIRS", "(none)",
       "comma-separated host directories that a StorageClass's pvDir parameter may name, besides PV_DIR "
       "(each mounted into the pod at the same path)",
       [](Config& c, const std::string& v) -> std::string {
         c.allowed_pv_dirs.clear();
         for (size_t start = 0; start <= v.size() && !v.empty();) {
           size_t end = std::min(v.find(',', start), v.size());
           std::string item = v.substr(start, end - start), n;
           if (!NormaliseAbsolute(item, &n) || n == "/")
             return "must list absolute paths without \"..\", other than \"/\", not \"" + item + "\"";
           c.allowed_pv_dirs.push_back(n);
           start = end + 1;
         }
         return "";
       }},
      {"node-name", "NODE_NAME", "(none: single-node mode)",
       "the node this instance serves (node-aware mode, one instance per node as a DaemonSet): it provisions "
       "only claims for this node and removes only volumes made on it",
       [](Config& c, const std::string& v) -> std::string {
         if (!v.empty() && !IsDnsName(v, 253))
           return "must be a node name (lower-case letters, digits, '-' and '.'), not \"" + v + "\"";
         c.node_name = v;
         return "";
       }},
      {"deleted-node-cleanup-delay", "DELETED_NODE_CLEANUP_DELAY", "0 (never)",
       "node-aware mode: seconds after a Node object is deleted (and not made again) when the claims bound to "
       "the volumes made on it, and then those volumes, are deleted; their data was on that node",
       [](Config& c, const std::string& v) { return ParseInt(v, 0, 30 * 86400, c.deleted_node_cleanup_seconds); }},
      {"small-cluster-nodes", "SMALL_CLUSTER_NODES", "8",
       "node-aware mode: while the cluster has at most this many nodes, every instance watches every claim and "
       "no claim waits for the dispatcher's label; past a quarter more (at least one more), each watches only "
       "its own node's; 0 = always its own node's",
       [](Config& c, const std::string& v) { return ParseInt(v, 0, 100000, c.small_cluster_nodes); }},
      {"require-mount", "REQUIRE_MOUNT", "false",
       "default of the StorageClass parameter requireMount: make and remove volumes only while a filesystem is "
       "mounted at their root (for a network share mounted on every node)",
       [](Config& c, const std::string& v) { return ParseBool(v, c.require_mount); }},
      {"check-free-space", "CHECK_FREE_SPACE", "true",
       "default of the StorageClass parameter checkFreeSpace: a claim is provisioned only if its size fits in "
       "its root's free space (less what other volumes there were promised, unless the class overcommits)",
       [](Config& c, const std::string& v) { return ParseBool(v, c.check_free_space); }},
      {"overcommit", "OVERCOMMIT", "true",
       "default of the StorageClass parameter overcommit; false: the free-space check also subtracts the capacity "
       "of the other volumes under the same root (sizes add up to at most the disk)",
       [](Config& c, const std::string& v) { return ParseBool(v, c.overcommit); }},
      {"quota", "QUOTA", "false",
       "default of the StorageClass parameter quota: true enforces each volume's size (ext4 and XFS project "
       "quotas, btrfs qgroups) and refuses a claim where its root cannot; auto enforces where it can; false never",
       [](Config& c, const std::string& v) -> std::string {
         if (v != "true" && v != "auto" && v != "false") return "must be true, auto or false, not \"" + v + "\"";
         c.quota = v;
         return "";
       }},
      {"reclaim-policy", "PV_RECLAIM_POLICY", "(the StorageClass's reclaimPolicy)",
       "Retain or Delete: overrides the StorageClass for every volume made",
       [](Config& c, const std::string& v) -> std::string {
         if (v != "Retain" && v != "Delete" && !v.empty()) return "must be Retain or Delete, not \"" + v + "\"";
         c.reclaim_policy = v;
         return "";
       }},
      {"provisioner-name", "PROVISIONER_NAME", kDefaultProvisionerName,
       "the StorageClass provisioner this program serves",
       [](Config& c, const std::string& v) -> std::string {
         if (v.empty() || v.size() > 253 || v.find_first_of(" \t\n\"\\") != std::string::npos)
           return "must be a qualified name like example.com/hostpath, not \"" + v + "\"";
         c.provisioner_name = v;
         return "";
       }},
      {"capacity-provisioner-name", "CAPACITY_PROVISIONER_NAME", "(none)",
       "node-aware mode: a second provisioner name, without \"/\" (a CSIDriver's name), that this program also serves; "
       "for WaitForFirstConsumer classes of that name each instance publishes its node's free space as "
       "CSIStorageCapacity objects, so that the scheduler places pods only where their claims fit",
       [](Config& c, const std::string& v) -> std::string {
         if (!v.empty() && !IsDnsName(v, 253))
           return "must be a CSIDriver's name (a DNS subdomain: lower-case letters, digits, '-' and '.', no \"/\"), like "
                  "hostpath.hostpath-provisioner.io, not \"" + v + "\"";
         c.capacity_provisioner_name = v;
         return "";
       }},
      {"capacity-interval", "CAPACITY_INTERVAL", "10",
       "with CAPACITY_PROVISIONER_NAME: seconds between checks of each root's free space against the published "
       "capacity (a provision or a removal updates it at once)",
       [](Config& c, const std::string& v) { return ParseInt(v, 1, 3600, c.capacity_interval_seconds); }},
      {"dir-mode", "PV_DIR_MODE", "0777",
       "octal mode of new volume directories (0777 lets pods running as any uid write)",
       [](Config& c, const std::string& v) -> std::string {
         char* end = nullptr;
         unsigned long m = std::strtoul(v.c_str(), &end, 8);
         if (v.empty() || *end != '\0' || m > 07777) return "must be an octal mode like 0775, not \"" + v + "\"";
         if (m & 04000) return "must not set the set-user-ID bit (04000), not \"" + v + "\"";
         c.dir_mode = static_cast<unsigned>(m);
         return "";
       }},
      {"kubeconfig", "KUBECONFIG", "(in-cluster service account)",
       "kubeconfig file for running outside the cluster; its current context is used",
       [](Config& c, const std::string& v) -> std::string {
         // kubectl allows a list separated by ':'; we take the first file.
         c.kubeconfig = v.substr(0, v.find(':'));
         return "";
       }},
      {"serviceaccount-dir", "SERVICEACCOUNT_DIR", kDefaultServiceAccountDir,
       "folder holding the in-cluster token, ca.crt and namespace",
       [](Config& c, const std::string& v) -> std::string {
         if (v.empty()) return "must not be empty";
         c.serviceaccount_dir = v;
         return "";
       }},
      {"allow-insecure-kubeconfig", "ALLOW_INSECURE_KUBECONFIG", "false",
       "accept a kubeconfig with insecure-skip-tls-verify (the server is then not verified)",
       [](Config& c, const std::string& v) { return ParseBool(v, c.allow_insecure_kubeconfig); }},
      {"metrics-address", "METRICS_ADDRESS", ":8080",
       "address of /healthz, /readyz and /metrics; \"\" turns the endpoint off",
       [](Config& c, const std::string& v) -> std::string {
         size_t colon = v.rfind(':');
         int port = 0;
         if (!v.empty() && (colon == std::string::npos || !ParseInt(v.substr(colon + 1), 1, 65535, port).empty()))
           return "must be host:port or :port with a port from 1 to 65535, not \"" + v + "\"";
         c.metrics_address = v;
         return "";
       }},
      {"resync-period", "RESYNC_PERIOD", "300",
       "seconds between passes over all cached objects (catches anything missed); 0 = never",
       [](Config& c, const std::string& v) { return ParseInt(v, 0, 86400, c.resync_seconds); }},
      {"usage-scan-interval", "USAGE_SCAN_INTERVAL", "60",
       "seconds between passes that measure each volume's used bytes and inodes for /metrics "
       "(kubelet_volume_stats_*; a low-priority walk of its directory, as du -sx); 0 = no scan, no such metrics",
       [](Config& c, const std::string& v) { return ParseInt(v, 0, 86400, c.usage_scan_seconds); }},
      {"workers", "WORKERS", "4",
       "claims and volumes handled at once; one slow directory removal or API call holds up only one of them",
       [](Config& c, const std::string& v) { return ParseInt(v, 1, 64, c.workers); }},
      {"leader-elect", "LEADER_ELECT", "false",
       "hold a coordination.k8s.io Lease before provisioning, so replicas never act twice",
       [](Config& c, const std::string& v) { return ParseBool(v, c.leader_elect); }},
      {"leader-elect-namespace", "LEADER_ELECT_NAMESPACE", "(the service account's namespace)",
       "namespace of the Lease (node-aware mode: of the claim dispatcher's Lease)",
       [](Config& c, const std::string& v) -> std::string {
         c.leader_elect_namespace = v;
         return "";
       }},
      {"api-timeout", "API_TIMEOUT", "30",
       "seconds a request to the API server may wait to be sent, or for each part of its answer, before it is "
       "abandoned and retried (watches are not affected)",
       [](Config& c, const std::string& v) { return ParseInt(v, 1, 600, c.api_timeout_seconds); }},
      {"leader-elect-lease-duration", "LEADER_ELECT_LEASE_DURATION", "30",
       "seconds a silent leader keeps the Lease before another replica takes over (node-aware mode: the claim "
       "dispatcher's Lease)",
       [](Config& c, const std::string& v) { return ParseInt(v, 3, 3600, c.lease_seconds); }},
      {"v", "LOG_LEVEL", "0", "log verbosity: 0 = outcomes and errors, 1 = decisions, 2 = requests",
       [](Config& c, const std::string& v) { return ParseInt(v, 0, 9, c.verbosity); }},
      {"log-format", "LOG_FORMAT", "text", "text or json",
       [](Config& c, const std::string& v) -> std::string {
         if (v != "text" && v != "json") return "must be text or json, not \"" + v + "\"";
         c.log_format = v;
         return "";
       }},
  };
  return table;
}


std::string NestedRoots(const Config& c) {
  std::vector<std::pair<std::string, std::string>> roots{{c.pv_dir, "PV_DIR (--pv-dir)"}};
  for (const std::string& d : c.allowed_pv_dirs) roots.emplace_back(d, "ALLOWED_PV_DIRS (--allowed-pv-dirs)");
  for (const auto& [outer, outer_setting] : roots)
    for (const auto& [inner, inner_setting] : roots)
      if (inner != outer && PathWithin(inner, outer))
        return inner_setting + " " + inner + " is inside " + outer_setting + " " + outer +
               ": roots must not nest (a volume of the outer one could be, or hold, the inner root with every volume "
               "and archive in it). Mount the inner disk elsewhere, e.g. beside " + outer + ", and name that path";
  return "";
}

Result<Config> ParseConfig(const std::vector<std::string>& args, const std::function<const char*(const char*)>& getenv) {
  Config c;
  for (const Setting& s : Settings()) {
    const char* v = *s.env ? getenv(s.env) : nullptr;
    if (v == nullptr) continue;
    std::string err = s.apply(c, v);
    if (!err.empty()) return Status::Invalid(std::string(s.env) + " (--" + s.flag + ") " + err);
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") { c.show_help = true; continue; }
    if (a == "--version") { c.show_version = true; continue; }
    if (a.rfind("--", 0) != 0) return Status::Invalid("unexpected argument \"" + a + "\" (see --help)");
    std::string name = a.substr(2), value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    const Setting* found = nullptr;
    for (const Setting& s : Settings())
      if (name == s.flag) found = &s;
    if (found == nullptr) return Status::Invalid("unknown flag --" + name + " (see --help)");
    if (!has_value) {
      if (name == "allow-insecure-kubeconfig" || name == "leader-elect") {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return Status::Invalid("--" + name + " needs a value");
      }
    }
    std::string err = found->apply(c, value);
    if (!err.empty()) {
      std::string env = *found->env ? std::string(" (") + found->env + ")" : "";
      return Status::Invalid("--" + name + env + " " + err);
    }
  }
  if (c.deleted_node_cleanup_seconds > 0 && c.node_name.empty())
    return Status::Invalid("DELETED_NODE_CLEANUP_DELAY (--deleted-node-cleanup-delay) needs NODE_NAME (--node-name): "
                           "only volumes made in node-aware mode name their node");
  if (c.leader_elect && !c.node_name.empty())
    return Status::Invalid("LEADER_ELECT (--leader-elect) cannot be used with NODE_NAME (--node-name): each instance "
                           "serves only its own node, so instances never contend and need no lease");
  if (!c.capacity_provisioner_name.empty() && c.node_name.empty())
    return Status::Invalid("CAPACITY_PROVISIONER_NAME (--capacity-provisioner-name) needs NODE_NAME (--node-name): "
                           "storage capacity tells the scheduler which node has room, and a single-node install has "
                           "no node to choose");
  if (c.capacity_provisioner_name == c.provisioner_name)
    return Status::Invalid("CAPACITY_PROVISIONER_NAME (--capacity-provisioner-name) must differ from PROVISIONER_NAME "
                           "(--provisioner-name) \"" + c.provisioner_name + "\": it is a second name");
  if (std::string nested = NestedRoots(c); !nested.empty()) return Status::Invalid(nested);
  return c;
}

std::string HelpText() {
  std::string out =
      "Usage: hostpath-provisioner [flags]\n"
      "Provisions PersistentVolumes as directories under a host folder, and removes them when\n"
      "their claims are deleted (reclaim policy Delete).\n\nFlags (each also read from its environment variable):\n";
  for (const Setting& s : Settings()) {
    out += std::string("  --") + s.flag + (*s.env ? std::string("  [$") + s.env + "]" : "") + "\n      " + s.help +
           "\n      default: " + s.default_text + "\n";
  }
  out += "  --help\n      print this text and exit\n  --version\n      print the version and exit\n";
  return out;
}
