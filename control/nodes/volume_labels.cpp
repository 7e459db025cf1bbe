// The labelling pass of old PVs: the body (volume_labels.hpp has the contract).
#include "control/nodes/volume_labels.hpp"

#include <string>
#include <vector>

#include "base/log.hpp"
#include "decide/node_labels.hpp"

int LabelOldVolumes(const Config& cfg, KubeApi& api) {
  if (cfg.node_name.empty()) return 0;
  std::vector<Volume> todo;
  std::string token;
  const std::string unlabelled = std::string("!") + node_label::kKey;
  do {
    Result<ListPage> page = api.List<Volume>(
        api::kVolumes, token, 500,
        [&](Result<Volume> v) {
          if (v.ok() && LabelsVolume(cfg, *v)) todo.push_back(*v);
        },
        unlabelled);
    if (!page.ok()) {
      LogWarn("labelling the PVs of node " + cfg.node_name + " made before the node label: " + page.status().message() +
              "; they stay unlabelled until the next start (nothing else changes)");
      break;
    }
    token = page->continue_token;
  } while (!token.empty());
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
