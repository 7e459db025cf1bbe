// The metrics text of metrics.hpp, written by hand: the exposition format is a few lines of
// text, and a client library would bring a registry this program does not need.
#include "serve/metrics.hpp"

#include <sstream>
#include <vector>

#include "control/remove/archives.hpp"
#include "control/controller.hpp"
#include "control/usage.hpp"
#include "fs/fsops.hpp"

void RequestCounter::Count(const std::string& verb, const std::string& resource, int code) {
  std::lock_guard<std::mutex> lock(mu_);
  counts_[std::make_tuple(verb, resource, code)]++;
}

std::map<std::tuple<std::string, std::string, int>, long> RequestCounter::Snapshot() {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

namespace {

// A label value as the text exposition format writes it: backslash, double quote and newline
// escaped.
std::string Label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// A histogram as the exposition format writes it: cumulative buckets, sum and count.
void Histogram(std::ostringstream& o, const std::string& name, const char* help, ControllerStats::Histogram& h) {
  std::lock_guard<std::mutex> lock(h.mu);
  o << "# HELP " << name << " " << help << "\n# TYPE " << name << " histogram\n";
  long cumulative = 0;
  for (int i = 0; i < ControllerStats::Histogram::kBuckets; ++i) {
    cumulative += h.counts[i];
    o << name << "_bucket{le=\"" << ControllerStats::Histogram::kBounds[i] << "\"} " << cumulative << "\n";
  }
  cumulative += h.counts[ControllerStats::Histogram::kBuckets];
  o << name << "_bucket{le=\"+Inf\"} " << cumulative << "\n";
  o << name << "_sum " << h.sum << "\n" << name << "_count " << h.count << "\n";
}

// The usage scan's figures under kubelet's names and labels (kubelet labels by namespace and
// persistentvolumeclaim; persistentvolume is ours, so that a series names its PV too), and
// the scan's own progress. Kubelet's HELP texts, with what each means for a directory.
void Usage(std::ostringstream& o, const UsageScanner& scanner) {
  const char* p = "hostpath_provisioner_";
  o << "# HELP " << p << "usage_scans_total Passes of the usage scan over every volume, completed.\n# TYPE " << p
    << "usage_scans_total counter\n" << p << "usage_scans_total " << scanner.passes() << "\n";
  o << "# HELP " << p << "usage_scan_entries_total Files and directories counted by the usage scan.\n# TYPE " << p
    << "usage_scan_entries_total counter\n" << p << "usage_scan_entries_total " << scanner.entries() << "\n";
  o << "# HELP " << p << "usage_scan_last_duration_seconds How long the last completed pass of the usage scan took.\n"
    << "# TYPE " << p << "usage_scan_last_duration_seconds gauge\n" << p << "usage_scan_last_duration_seconds "
    << scanner.last_pass_seconds() << "\n";
  const std::vector<VolumeUsage> volumes = scanner.Snapshot();
  if (volumes.empty()) return;
  struct Gauge {
    const char* name;
    const char* help;
    bool (*has)(const VolumeUsage&);
    uint64_t (*value)(const VolumeUsage&);
  };
  static const Gauge gauges[] = {
      {"capacity_bytes", "Capacity in bytes of the volume (hostpath-provisioner: the PV's capacity, which a hostPath "
       "volume is not held to)",
       [](const VolumeUsage& u) { return u.capacity_bytes >= 0; },
       [](const VolumeUsage& u) { return static_cast<uint64_t>(u.capacity_bytes); }},
      {"available_bytes", "Number of available bytes in the volume (hostpath-provisioner: its capacity less its used "
       "bytes, at most what its filesystem has free, never below 0)",
       [](const VolumeUsage&) { return true; }, [](const VolumeUsage& u) { return AvailableBytes(u); }},
      {"used_bytes", "Number of used bytes in the volume (hostpath-provisioner: space allocated to its directory tree, "
       "as du -sx counts it, or as its quota charges it when its size is enforced, at the last usage scan)",
       [](const VolumeUsage&) { return true; }, [](const VolumeUsage& u) { return u.used_bytes; }},
      {"inodes", "Maximum number of inodes in the volume (hostpath-provisioner: its filesystem's)",
       [](const VolumeUsage&) { return true; }, [](const VolumeUsage& u) { return u.fs.inodes; }},
      {"inodes_free", "Number of free inodes in the volume (hostpath-provisioner: its filesystem's)",
       [](const VolumeUsage&) { return true; }, [](const VolumeUsage& u) { return u.fs.inodes_free; }},
      {"inodes_used", "Number of used inodes in the volume (hostpath-provisioner: files and directories in its "
       "directory, as du -sx --inodes counts them or its project quota charges them, at the last usage scan; none "
       "for a btrfs volume whose size is enforced, as its qgroup counts no inodes)",
       [](const VolumeUsage& u) { return u.inodes_known; }, [](const VolumeUsage& u) { return u.inodes_used; }},
  };
  for (const Gauge& g : gauges) {
    const std::string name = std::string("kubelet_volume_stats_") + g.name;
    o << "# HELP " << name << " " << g.help << "\n# TYPE " << name << " gauge\n";
    for (const VolumeUsage& u : volumes)
      if (g.has(u))
        o << name << "{namespace=\"" << Label(u.namespace_) << "\",persistentvolumeclaim=\"" << Label(u.claim)
          << "\",persistentvolume=\"" << Label(u.volume) << "\"} " << g.value(u) << "\n";
  }
}

// Each root's archives (onDelete: "archive"), as the last archive pass found them: how many,
// and the space they take (those measured; an archive is measured once, on the pass after it is
// made). Roots without archives are left out.
void Archives(std::ostringstream& o, const std::vector<ArchiveFigures>& roots) {
  if (roots.empty()) return;
  const char* p = "hostpath_provisioner_";
  o << "# HELP " << p << "archives Archived volume directories in each root's .archive folder, at the last archive pass.\n"
    << "# TYPE " << p << "archives gauge\n";
  for (const ArchiveFigures& f : roots) o << p << "archives{root=\"" << Label(f.root) << "\"} " << f.count << "\n";
  o << "# HELP " << p << "archive_bytes Space taken by the archives in each root's .archive folder, as du counts it "
       "(archives not measured yet left out).\n# TYPE " << p << "archive_bytes gauge\n";
  for (const ArchiveFigures& f : roots) o << p << "archive_bytes{root=\"" << Label(f.root) << "\"} " << f.bytes << "\n";
}

}  // namespace

std::string MetricsText(Controller& controller, RequestCounter& requests, const Roots& roots) {
  std::ostringstream o;
  ControllerStats& s = controller.stats();
  const char* p = "hostpath_provisioner_";
  o << "# HELP " << p << "provisions_total Volumes provisioned, by result.\n# TYPE " << p << "provisions_total counter\n";
  o << p << "provisions_total{result=\"success\"} " << s.provisioned << "\n";
  o << p << "provisions_total{result=\"failure\"} " << s.provision_failed << "\n";
  o << "# HELP " << p << "deletions_total Volumes deleted, by result.\n# TYPE " << p << "deletions_total counter\n";
  o << p << "deletions_total{result=\"success\"} " << s.deleted << "\n";
  o << p << "deletions_total{result=\"failure\"} " << s.delete_failed << "\n";
  const CloneStats& c = controller.clone_stats();
  o << "# HELP " << p << "clones_total Copies made for clones (claims whose dataSource is a claim), by method and result.\n"
    << "# TYPE " << p << "clones_total counter\n";
  for (CopyMethod m : {CopyMethod::kSnapshot, CopyMethod::kReflink, CopyMethod::kBytes})
    o << p << "clones_total{method=\"" << Describe(m) << "\",result=\"success\"} " << c.by_method[static_cast<int>(m)] << "\n";
  o << p << "clones_total{result=\"failure\"} " << c.failed << "\n";
  o << "# HELP " << p << "clone_bytes_total File data copied for clones (a snapshot copies none).\n# TYPE " << p
    << "clone_bytes_total counter\n" << p << "clone_bytes_total " << c.bytes << "\n";
  o << "# HELP " << p << "clone_seconds_total Time spent on complete copies for clones.\n# TYPE " << p
    << "clone_seconds_total counter\n" << p << "clone_seconds_total " << c.millis / 1000.0 << "\n";
  Histogram(o, std::string(p) + "provision_duration_seconds",
                            "Time to make a directory and create its PV.", s.provision_seconds);
  Histogram(o, std::string(p) + "deletion_duration_seconds",
                            "Time to remove a directory and delete its PV.", s.delete_seconds);
  o << "# HELP " << p << "workqueue_depth Keys waiting in the work queue.\n# TYPE " << p << "workqueue_depth gauge\n";
  o << p << "workqueue_depth " << controller.QueueDepth() << "\n";
  o << "# HELP " << p << "watch_restarts_total Watches restarted (ended, failed or expired).\n# TYPE " << p
    << "watch_restarts_total counter\n";
  o << p << "watch_restarts_total " << controller.WatchRestarts() << "\n";
  o << "# HELP " << p << "api_requests_total Requests to the API server, by verb, resource and HTTP code (0 = no answer).\n"
    << "# TYPE " << p << "api_requests_total counter\n";
  for (const auto& [k, n] : requests.Snapshot())
    o << p << "api_requests_total{verb=\"" << std::get<0>(k) << "\",resource=\"" << Label(std::get<1>(k)) << "\",code=\""
      << std::get<2>(k) << "\"} " << n << "\n";
  o << "# HELP " << p << "cached_objects Claims and PVs held in the watch caches (node-aware: this node's, the shared "
    << "ones, and the PVs with no node label).\n# TYPE " << p << "cached_objects gauge\n";
  o << p << "cached_objects{kind=\"PersistentVolumeClaim\"} " << controller.CachedClaims() << "\n";
  o << p << "cached_objects{kind=\"PersistentVolume\"} " << controller.CachedVolumes() << "\n";
  o << "# HELP " << p << "dispatcher 1 while this instance holds the dispatch Lease and labels claims with their nodes "
    << "(node-aware mode).\n# TYPE " << p << "dispatcher gauge\n" << p << "dispatcher "
    << (controller.dispatcher().Leading() ? 1 : 0) << "\n";
  o << "# HELP " << p << "claims_dispatched_total Claims this instance labelled with their node (or whose label it "
    << "took off).\n# TYPE " << p << "claims_dispatched_total counter\n" << p << "claims_dispatched_total "
    << controller.dispatcher().Labelled() << "\n";
  o << "# HELP " << p << "dispatch_fallback 1 when this instance watches every claim because its RBAC lacks what the "
    << "dispatch needs (the log says what; node-aware mode).\n# TYPE " << p << "dispatch_fallback gauge\n" << p
    << "dispatch_fallback " << (controller.DispatchFallback().empty() ? 0 : 1) << "\n";
  o << "# HELP " << p << "every_claim_watched 1 while this instance watches every claim, not only its node's "
    << "(node-aware mode: a small cluster, SMALL_CLUSTER_NODES; or the fallback).\n# TYPE " << p
    << "every_claim_watched gauge\n" << p << "every_claim_watched " << (controller.WatchesEveryClaim() ? 1 : 0) << "\n";
  if (controller.capacity().Enabled()) {
    o << "# HELP " << p << "capacity_writes_total Writes of this node's CSIStorageCapacity objects (creates, "
      << "updates, deletes).\n# TYPE " << p << "capacity_writes_total counter\n" << p << "capacity_writes_total "
      << controller.capacity().Writes() << "\n";
    o << "# HELP " << p << "capacity_bytes The room for a new volume of each class on this node, as last published "
      << "for the scheduler.\n# TYPE " << p << "capacity_bytes gauge\n";
    for (const auto& [cls, bytes] : controller.capacity().Published())
      o << p << "capacity_bytes{storageclass=\"" << Label(cls) << "\"} " << bytes << "\n";
  }
  o << "# HELP " << p << "watch_objects_total Claims, PVs and classes received by the watches (events and listed "
    << "objects).\n# TYPE " << p << "watch_objects_total counter\n" << p << "watch_objects_total "
    << controller.WatchReceived() << "\n";
  std::ostringstream free, total;
  for (const Roots::Ref& root : roots.Opened()) {
    uint64_t free_bytes = 0, total_bytes = 0;
    if (!root->Space(&free_bytes, &total_bytes).ok()) continue;
    free << p << "root_free_bytes{root=\"" << Label(root->path()) << "\"} " << free_bytes << "\n";
    total << p << "root_total_bytes{root=\"" << Label(root->path()) << "\"} " << total_bytes << "\n";
  }
  if (!free.str().empty()) {
    o << "# HELP " << p << "root_free_bytes Free bytes on the filesystem of each volume root.\n# TYPE " << p
      << "root_free_bytes gauge\n" << free.str();
    o << "# HELP " << p << "root_total_bytes Size of the filesystem of each volume root.\n# TYPE " << p
      << "root_total_bytes gauge\n" << total.str();
  }
  Archives(o, controller.archives().Snapshot());
  if (controller.usage().enabled()) Usage(o, controller.usage());
  return o.str();
}

