// What the end-to-end tests of placement by free space share (e2e_capacity, e2e_attack_capacity):
// reading the CSIStorageCapacity objects the instances publish, a pod's Unschedulable message,
// filling a disk, and two nodes whose roots are tmpfs of known sizes under the DaemonSet
// install's class and CSIDriver.
#pragma once
#include <map>
#include <memory>
#include <string>

#include <picojson.h>

#include "test/support/harness.hpp"
#include "test/support/nodes_harness.hpp"
#include "test/support/tmpfs.hpp"

namespace harness {

inline constexpr uint64_t kCapMiB = uint64_t{1} << 20;
extern const std::string kCapacityObjects;  // the objects' collection (kube-system)

// The objects of class `cls`, by the node their topology names.
std::map<std::string, picojson::value> Objects(Nodes& n, const std::string& cls = "hostpath");

// The bytes node's object for the class says (-1: no object).
double Capacity(Nodes& n, const std::string& node, const std::string& cls = "hostpath");

// A pod's PodScheduled condition message ("" when it has none, or it is True).
std::string Unschedulable(Nodes& n, const std::string& pod);

// Writes `mib` MiB to `path` (a file filling a node's disk, as another program's would).
void FillMiB(const std::string& path, int mib);

// The DaemonSet install's class (replacing the harness's) and, if `driver`, its CSIDriver;
// node-a and node-b registered.
void InstallCapacityClass(Nodes& n, bool driver = true);

// InstallCapacityClass, with node-a's and node-b's roots tmpfs of the given sizes: `mounted`
// false (the test then returns) where a tmpfs cannot be mounted. Start runs both instances with
// `env` and waits for their objects.
struct TwoDisks {
  Nodes n;
  std::unique_ptr<Tmpfs> a, b;
  bool mounted = false;
  TwoDisks(const char* size_a, const char* size_b, const std::string& rbac = "manifests/daemonset/rbac.yaml");
  void Start(const std::map<std::string, std::string>& env);
};

}  // namespace harness
