// The one step of its own that a shared volume needs (a root every host mounts, node-aware
// mode; reconcile.hpp IsShared): taking it over from the node named on it once that node's
// Node object is gone, so that a released volume is still removed when the instance that made
// it is gone. The rest (make, remove, expand) are the steps of any volume, taken by the node
// named on it. The take-over is an annotation patch guarded by the PV's resourceVersion:
// of several instances trying at once, one succeeds and the others see a conflict.
#pragma once
#include <string>

#include "base/config.hpp"
#include "kube/k8s.hpp"
#include "base/log.hpp"
#include "decide/reconcile.hpp"
#include "kube/recorder.hpp"

class SharedSteps {
 public:
  SharedSteps(const Config& cfg, EventRecorder* recorder) : cfg_(cfg), recorder_(recorder) {}

  // Ok with *taken when this node now acts on `v` (its watch event brings the rest), with
  // !*taken when `holder` still exists (its instance acts; ask again later); an API error
  // (a conflict: another instance took it, or it changed) otherwise.
  Status Adopt(KubeApi& api, const Volume& v, const std::string& holder, const Involved& pv, bool* taken) {
    *taken = false;
    Status s = api.GetNode(holder);
    if (s.ok()) return s;
    if (s.code() != Status::kNotFound) return Logged(v, s);
    if (s = api.SetVolumeAnnotation(v, ann::kNode, cfg_.node_name); !s.ok()) {
      if (s.code() == Status::kNotFound) return Status::Ok();  // gone meanwhile
      return s.code() == Status::kConflict ? s : Logged(v, s);
    }
    *taken = true;
    const std::string message = "node " + holder + " no longer exists: node " + cfg_.node_name +
                                "'s instance takes this shared volume over (removes it)";
    LogInfo("volume " + v.meta.name + ": " + message);
    recorder_->Normal(pv, "NodeDeleted", message);
    return Status::Ok();
  }

 private:
  static Status Logged(const Volume& v, const Status& s) {
    LogWarn("volume " + v.meta.name + ": " + s.message());
    return s;
  }

  const Config& cfg_;
  EventRecorder* recorder_;
};
