// The take-over of a shared volume: the body (shared.hpp has the contract).
#include "control/nodes/shared.hpp"

#include "base/log.hpp"
#include "decide/reconcile.hpp"

namespace {

Status Logged(const Volume& v, const Status& s) {
  LogWarn("volume " + v.meta.name + ": " + s.message());
  return s;
}

}  // namespace

Status SharedSteps::Adopt(KubeApi& api, const Volume& v, const std::string& holder, const Involved& pv, bool* taken) {
  *taken = false;
  Status s = api.GetNode(holder).status();
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
