// Plain structs for the Kubernetes objects the provisioner reads and writes. Only the fields
// it uses; no JSON here (k8s_json.hpp maps them). Field names follow the API's.
#pragma once
#include <map>
#include <string>
#include <vector>

struct ObjectMeta {
  std::string name;
  std::string namespace_;  // empty for cluster-scoped objects
  std::string uid;
  std::string resource_version;
  std::map<std::string, std::string> annotations;
  std::map<std::string, std::string> labels;
  std::vector<std::string> finalizers;
  bool deleting = false;  // metadata.deletionTimestamp is set
};

struct StorageClass {
  ObjectMeta meta;
  std::string provisioner;
  std::string reclaim_policy;       // "" means the API default, Delete
  std::string volume_binding_mode;  // Immediate | WaitForFirstConsumer
  std::map<std::string, std::string> parameters;
  std::vector<std::string> mount_options;
  bool allow_volume_expansion = false;
};

// What a claim's volume starts from (spec.dataSource, else spec.dataSourceRef): a claim to
// clone has kind PersistentVolumeClaim and an empty apiGroup, in the claim's namespace.
struct DataSource {
  std::string api_group, kind, name;
};

struct Claim {
  ObjectMeta meta;
  bool has_storage_class_name = false;  // spec.storageClassName present (even "")
  std::string storage_class_name;
  std::vector<std::string> access_modes;
  std::string volume_mode;       // "" means Filesystem
  std::string storage_request;   // spec.resources.requests.storage, as written
  std::string volume_name;       // spec.volumeName
  bool has_selector = false;     // spec.selector present
  bool has_data_source = false;  // spec.dataSource / dataSourceRef present
  DataSource data_source;        // ... and what it says
  std::string phase;             // status.phase
  std::string capacity;          // status.capacity.storage, as written
  bool resizing = false;         // status.conditions has Resizing "True"
  // The request and the capacity in bytes (-1: not known), kept in the cache of a bound claim
  // instead of the texts: is an expansion asked for?
  int64_t request_bytes = -1, capacity_bytes = -1;
};

struct ClaimRef {
  std::string namespace_;
  std::string name;
  std::string uid;
};

struct Volume {
  ObjectMeta meta;
  std::string capacity;  // spec.capacity.storage
  int64_t capacity_bytes = -1;  // the same in bytes, kept in the cache instead (-1: not known)
  std::vector<std::string> access_modes;
  std::string volume_mode;
  std::string storage_class_name;
  std::string reclaim_policy;  // Retain | Delete | Recycle
  std::vector<std::string> mount_options;
  bool has_claim_ref = false;
  ClaimRef claim_ref;
  std::string host_path;       // spec.hostPath.path, or spec.local.path when `local`
  std::string host_path_type;  // spec.hostPath.type
  bool local = false;          // a `local` volume (spec.local) rather than a hostPath one
  std::string node;            // spec.nodeAffinity: kubernetes.io/hostname In [node]; written only
  std::string phase;           // status.phase
};

// A core/v1 Event about an object (the "involvedObject").
struct Event {
  ObjectMeta meta;  // name and namespace of the Event itself
  std::string involved_kind;
  std::string involved_namespace;
  std::string involved_name;
  std::string involved_uid;
  std::string involved_api_version = "v1";
  std::string involved_resource_version;
  std::string type;  // Normal | Warning
  std::string reason;
  std::string message;
  int count = 1;
  std::string first_timestamp;  // RFC 3339
  std::string last_timestamp;
  std::string source_component;
};

// A core/v1 Node: only whether it exists matters.
struct Node {
  ObjectMeta meta;
};

// A storage.k8s.io/v1 CSIStorageCapacity: how large a new volume of a class may be on the nodes
// a selector names (here: one node, by its kubernetes.io/hostname label, as our PVs' affinity).
// The scheduler reads it for classes whose provisioner has a CSIDriver with storageCapacity.
struct StorageCapacity {
  ObjectMeta meta;
  std::string storage_class;        // storageClassName
  std::string node;                 // nodeTopology: matchLabels kubernetes.io/hostname: node
  std::string capacity;             // a quantity ("" when absent)
  std::string maximum_volume_size;  // a quantity ("" when absent)
  std::string owner_node_uid;       // written only: an ownerReference to the Node `node` (garbage collected with it)
};

// A storage.k8s.io/v1 CSIDriver: only whether it asks the scheduler to use storage capacity.
struct CsiDriver {
  ObjectMeta meta;
  bool storage_capacity = false;  // spec.storageCapacity
};

// A coordination.k8s.io/v1 Lease, for leader election.
struct Lease {
  ObjectMeta meta;
  std::string holder;        // spec.holderIdentity; "" when released
  int duration_seconds = 0;  // spec.leaseDurationSeconds
  std::string acquire_time;  // spec.acquireTime (metav1.MicroTime)
  std::string renew_time;    // spec.renewTime (metav1.MicroTime)
  int transitions = 0;       // spec.leaseTransitions
};

// Annotation and finalizer names the provisioner and the PV controller share.
namespace ann {
inline constexpr const char* kStorageProvisioner = "volume.kubernetes.io/storage-provisioner";
inline constexpr const char* kBetaStorageProvisioner = "volume.beta.kubernetes.io/storage-provisioner";
inline constexpr const char* kProvisionedBy = "pv.kubernetes.io/provisioned-by";
inline constexpr const char* kSelectedNode = "volume.kubernetes.io/selected-node";
inline constexpr const char* kBoundByController = "pv.kubernetes.io/bound-by-controller";
inline constexpr const char* kProvisionerFinalizer = "external-provisioner.volume.kubernetes.io/finalizer";
// Ours. On a claim: the node its volume goes to (for Immediate classes in node-aware mode).
// On a PV: the node whose instance made it and alone may remove it (node-aware mode; of a
// shared volume, another node's instance takes it over once that node is gone).
inline constexpr const char* kNode = "hostpath-provisioner.io/node";
// kubevirt's hostpath provisioner's claim annotation, with the meaning of kNode.
inline constexpr const char* kKubevirtNode = "kubevirt.io/provisionOnNode";
// On a PV: the root directory it was made under (one of the configured roots).
inline constexpr const char* kPvDir = "hostpath-provisioner.io/pv-dir";
// On a PV: "true" when its root must be a mounted filesystem to make or remove it (requireMount).
inline constexpr const char* kRequireMount = "hostpath-provisioner.io/require-mount";
inline constexpr const char* kHostnameLabel = "kubernetes.io/hostname";
// On a PV: "all" when its directory exists on every node (class parameter nodes: all);
// "shared" when its one directory is on a root every host mounts (see IsShared).
inline constexpr const char* kAllNodes = "hostpath-provisioner.io/nodes";
// How the volume's size is enforced, for people ("project 1234567", "btrfs subvolume 257");
// the provisioner reads it from the directory itself.
inline constexpr const char* kQuota = "hostpath-provisioner.io/quota";
// On a clone's PV: the claim it was copied from ("namespace/name"), and how.
inline constexpr const char* kClonedFrom = "hostpath-provisioner.io/cloned-from";
inline constexpr const char* kCloneMethod = "hostpath-provisioner.io/clone-method";
// On a PV, copied from its class (which may be gone when the volume is released): what
// becomes of the directory of a released Delete volume: "archive" (moved into the root's
// archive folder), "retain" (kept); absent: "delete" (removed).
inline constexpr const char* kOnDelete = "hostpath-provisioner.io/on-delete";
// On a PV with kOnDelete "archive": how long its archive is kept ("168h"; "0": for ever).
inline constexpr const char* kArchiveFor = "hostpath-provisioner.io/archive-for";
// On a PV of a class with pathPattern: its directory's path inside its root ("ns/name"), as
// the pattern made it from the claim (the claim's labels are not there to make it again).
inline constexpr const char* kDirName = "hostpath-provisioner.io/dir";
// The name part of the finalizer each node's instance holds on such a PV while its directory
// there exists: "<node name>/hostpath-provisioner.io". A node name is a DNS subdomain of at
// most 253 characters, which is what a finalizer's prefix may be, so every node name maps to
// a valid finalizer, and different nodes to different ones.
inline constexpr const char* kNodeFinalizerName = "hostpath-provisioner.io";
}  // namespace ann
