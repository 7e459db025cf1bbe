// The labelling pass of old PVs: the body (volume_labels.hpp has the contract).
#include "control/nodes/volume_labels.hpp"

#include <string>
#include <vector>

#include "base/log.hpp"
#include "decide/node_labels.hpp"

int LabelOldVolumes(const Config& cfg, KubeApi& api) {
  if (cfg.node_name.empty()) return 0;
  std::vector<Volume> todo;
  Status listed = api.ListAll<Volume>(api::kVolumes, std::string("!") + node_label::kKey, [&](Result<Volume> v) {
    if (v.ok() && LabelsVolume(cfg, *v)) todo.push_back(*v);
  });
  if (!listed.ok())
    LogWarn("labelling the PVs of node " + cfg.node_name + " made before the node label: " + listed.message() +
            "; they stay unlabelled until the next start (nothing else changes)");
  int labelled = 0;
  for (const Volume& v : todo) {
    const std::string value = VolumeLabel(cfg, v);
    Status s = api.SetVolumeLabel(v, node_label::kKey, value);
    if (s.ok()) {
      ++labelled;
    } else if (s.code() != Status::kNotFound && s.code() != Status::kConflict) {
      LogWarn("volume " + v.meta.name + ": " + s.message());
    }
  }
  if (labelled > 0) LogInfo("labelled " + std::to_string(labelled) + " PVs made before the node label " + node_label::kKey);
  return labelled;
}
