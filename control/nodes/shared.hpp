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
#include "kube/recorder.hpp"

class SharedSteps {
 public:
  // `cfg` and `recorder` must outlive the steps.
  SharedSteps(const Config& cfg, EventRecorder* recorder) : cfg_(cfg), recorder_(recorder) {}

  // Ok with *taken when this node now acts on `v` (its watch event brings the rest; a NodeDeleted
  // event on `pv` says so), with !*taken when `holder` still exists (its instance acts; ask
  // again later) or the PV is gone meanwhile; an API error (a conflict: another instance took
  // it, or it changed) otherwise, logged unless a conflict. Thread-safe.
  Status Adopt(KubeApi& api, const Volume& v, const std::string& holder, const Involved& pv, bool* taken);

 private:
  const Config& cfg_;
  EventRecorder* recorder_;
};
