// What the caches keep: the bodies (cache_slim.hpp has the contracts).
#include "decide/cache_slim.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/quantity.hpp"
#include "decide/names.hpp"
#include "decide/node_labels.hpp"

namespace {
// Drops the annotations not in `keep`, in place.
void KeepOnly(std::map<std::string, std::string>* m, const std::vector<std::string_view>& keep) {
  for (auto it = m->begin(); it != m->end();)
    it = std::find(keep.begin(), keep.end(), it->first) != keep.end() ? std::next(it) : m->erase(it);
}
}  // namespace

void SlimForCache(Claim* c) {
  KeepOnly(&c->meta.annotations, {ann::kStorageProvisioner, ann::kBetaStorageProvisioner,
                                  ann::kSelectedNode, ann::kNode, ann::kKubevirtNode});
  // A class's pathPattern may name a waiting claim's directory from its labels.
  if (!c->volume_name.empty()) c->meta.labels.clear();
  c->meta.finalizers.clear();
  Result<int64_t> request = QuantityToBytes(c->storage_request), capacity = QuantityToBytes(c->capacity);
  c->request_bytes = request.ok() ? *request : -1;
  c->capacity_bytes = capacity.ok() ? *capacity : -1;
  // A bound claim keeps its request, capacity and class only while it asks for more than it
  // has (an expansion).
  if (!c->volume_name.empty() && !(c->capacity_bytes >= 0 && c->request_bytes > c->capacity_bytes)) {
    c->capacity.clear();
    c->meta.annotations.clear();
    c->access_modes.clear();
    c->storage_request.clear();
    c->storage_class_name.clear();
    c->data_source = DataSource{};
  }
}

void SlimForDispatch(Claim* c) {
  KeepOnly(&c->meta.annotations, {ann::kStorageProvisioner, ann::kBetaStorageProvisioner,
                                  ann::kSelectedNode, ann::kNode, ann::kKubevirtNode});
  KeepOnly(&c->meta.labels, {node_label::kKey});
  c->meta.finalizers.clear();
  c->access_modes.clear();
  // Whether it waits for a volume or more room (volume_name, phase, the bytes): while the
  // cluster is small the dispatcher labels only such claims, late (dispatcher.hpp).
  Result<int64_t> request = QuantityToBytes(c->storage_request), capacity = QuantityToBytes(c->capacity);
  c->request_bytes = request.ok() ? *request : -1;
  c->capacity_bytes = capacity.ok() ? *capacity : -1;
  c->storage_request.clear();
  c->capacity.clear();
  c->data_source = DataSource{};
}

void SlimForCache(Node* n) { n->meta = ObjectMeta{n->meta.name, "", n->meta.uid, n->meta.resource_version}; }

void SlimForCache(Volume* v) {
  KeepOnly(&v->meta.annotations,
           {ann::kProvisionedBy, ann::kNode, ann::kPvDir, ann::kRequireMount, ann::kAllNodes, ann::kQuota, ann::kOnDelete,
            ann::kArchiveFor, ann::kDirName});
  v->meta.labels.clear();
  v->access_modes.clear();
  v->mount_options.clear();
  if (Result<int64_t> bytes = QuantityToBytes(v->capacity); bytes.ok()) v->capacity_bytes = *bytes;
  v->capacity.clear();
  v->volume_mode.clear();
  // A volume on every node: a node that joins later makes its directory from these.
  if (OnAllNodes(*v)) return;
  v->storage_class_name.clear();
  // Not provisioned by anyone we could be, or bound and not being deleted: nothing to do until
  // a later version (which the watch brings whole) says otherwise. The claim's uid and the path
  // stay: a claim checks that the volume of its name is its own, a deletion looks for other
  // volumes that use its directory. A provisioned volume keeps its claim's namespace and name:
  // the usage scan (usage.hpp) recomputes its directory from them and labels its metrics.
  const bool provisioned = v->meta.annotations.count(ann::kProvisionedBy) > 0;
  if (!provisioned) {
    v->claim_ref.namespace_.clear();
    v->claim_ref.name.clear();
  }
  if (!provisioned || (v->phase == "Bound" && !v->meta.deleting)) {
    v->host_path_type.clear();
    v->meta.finalizers.clear();
  }
}
