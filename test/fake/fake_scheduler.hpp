// The part of kube-scheduler (Kubernetes 1.24) that volume tests meet, run in-process after each
// round like the PV controller (fake_pvcontroller.hpp), reading the store's history like an
// informer, so each change it makes is an ordinary write with its own watch event:
//   - it schedules pods that have no spec.nodeName and the default scheduler name, whenever pods,
//     claims, volumes, nodes, classes, CSIDrivers or CSIStorageCapacities change (any change,
//     deletions too; the real VolumeBinding plugin asks to be woken for additions and updates of
//     these kinds, and finds a pod left unschedulable by a deletion within 5 minutes), in the
//     same round of the event loop as the change, so before the server answers the next request;
//   - PreFilter (plugins/volumebinding/volume_binding.go): every claim a pod names must exist, not
//     be Lost nor being deleted; unbound claims of Immediate classes keep the pod Pending ("pod
//     has unbound immediate PersistentVolumeClaims");
//   - Filter, per node, in the default plugins' order: NodeUnschedulable, TaintToleration
//     (NoSchedule and NoExecute taints), NodeAffinity (spec.nodeSelector and the required node
//     affinity), VolumeBinding (binder.go FindPodVolumes: a bound claim's PV must exist and its
//     node affinity match the node; an unbound WaitForFirstConsumer claim must be provisionable
//     there: if the claim already names a node in volume.kubernetes.io/selected-node, it is that
//     node; its class has a provisioner other than kubernetes.io/no-provisioner whose
//     allowedTopologies the node matches; and, when a CSIDriver named as the provisioner has
//     spec.storageCapacity true, some CSIStorageCapacity in any namespace with the class's name
//     whose nodeTopology selects the node's labels (a null one selects no node, an empty one
//     every node) has maximumVolumeSize, or when that is unset capacity, at least the claim's
//     storage request ("node(s) did not have enough free storage" otherwise; fake_csi.hpp
//     HasEnoughCapacity). The claims with a selected node are looked at first, then the others
//     smallest first, and the first that fails gives the node's reason);
//   - the first feasible node by name is chosen (the real one scores nodes);
//   - Reserve/PreBind (binder.go AssumePodVolumes, bindAPIUpdate): each unbound
//     WaitForFirstConsumer claim without volume.kubernetes.io/selected-node gets that annotation
//     (nothing else: the PV controller adds the provisioner annotations), one update per claim;
//     then the pod waits, as PreBind's checkBindings does, until all its claims are bound
//     (spec.volumeName and pv.kubernetes.io/bind-completed), and is bound to the node: spec.nodeName
//     and the condition PodScheduled=True, one write, as the binding subresource makes it. While
//     it waits the filters are run again at each change, but without the capacity check on the
//     node it waits for (checkBindings checks no capacity: a provisioner that publishes less
//     capacity once it made the volume does not send the pod back);
//   - a claim whose node was chosen that loses the annotation (as an external provisioner removes
//     it when provisioning there failed for good) or names another node while the pod waits is
//     a provisioning failure (checkBindings: "provisioning failed for PVC"): the pod gets
//     PodScheduled=False, reason SchedulerError, and is scheduled again at once. The real
//     scheduler retries after a backoff and may choose the same node; this one chooses the next
//     feasible node by name after the one that failed, wrapping around to the first (with one
//     node: the same node again);
//   - a pod that fits nowhere gets PodScheduled=False, reason Unschedulable, with the FitError
//     message ("0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1
//     node(s) were unschedulable.", "0/2 nodes are available: 2 node(s) did not have enough free
//     storage.", or "no nodes available to schedule pods") and nothing else changes.
// Known differences: no static binding of WaitForFirstConsumer claims to existing PVs (they are
// always provisioned); no resources, ports, pod affinity, topology spread or preemption (so no
// "preemption:" sentence in the message); no Events; no node lifecycle controller (a NotReady
// node is schedulable unless a test taints it); no backoff.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "test/fake/fake_admission.hpp"
#include "test/fake/fake_pvcontroller.hpp"

namespace fake {

class Scheduler {
 public:
  explicit Scheduler(Store& s) : s_(s) {}

  // Handles every change since the last call (its own included) until nothing changes; true
  // when there was any.
  bool Drain();

 private:
  struct Watched {
    const std::string plural;
    Feed feed;
  };
  // What the scheduler remembers of a pod between its attempts.
  struct Attempt {
    std::string uid;                       // of the pod (a pod made again under its name starts afresh)
    std::string assumed;                   // the node it waits for the claims of, or ""
    std::vector<std::string> provisioning;  // those claims (checkBindings' claimsToProvision)
    std::string failed;                    // the node where provisioning failed last
  };
  // A pod's claims, as GetPodVolumes sorts them.
  struct PodClaims {
    std::vector<JsonRef> bound, delayed;
  };

  // Keeps the set of pods to schedule in step with a pod that changed (null: deleted).
  void Track(const std::string& key, const Json* pod);

  static bool FullyBound(const Json& claim);
  static std::string ClassOf(const Json& claim);

  // VolumeBinding's PreFilter: the pod's claims sorted, or the reason it cannot be scheduled
  // anywhere in `why` (`error` when it is a scheduler error rather than unschedulable).
  bool PreFilter(const Json& pod, PodClaims& out, std::string& why, bool& error);

  static bool Tolerates(const Json& pod, const Json& taint);

  // component-helpers' MatchTopologySelectorTerms: no terms match every node.
  static bool MatchesTopology(const Json& sc, const Json* labels);

  // The filters for one node: the reasons it does not fit (none: it fits). `assumed`: the node the
  // pod waits for its claims on, or "".
  std::vector<std::string> Filter(const Json& pod, const PodClaims& claims, const Json& node, const std::string& assumed);

  // binder.go FindPodVolumes for one node; `waiting_here`: the pod waits for its claims on this
  // node (no capacity check).
  std::vector<std::string> VolumeFilter(const PodClaims& claims, const Json& node, bool waiting_here);

  // Sets the pod's PodScheduled condition (a status write, only when it changes); `node`, when
  // given, binds the pod to it in the same write.
  void SetScheduled(const Json& pod, const std::string& status, const std::string& reason, const std::string& message,
                    const std::string& node = "");

  // One scheduling attempt for the pod at key (or the wait for its claims to be bound).
  void Schedule(const std::string& key);

  // FitError.Error(): "0/N nodes are available: " and the reasons with their counts, sorted.
  static std::string FitError(const std::map<std::string, int>& reasons, size_t nodes);

  Store& s_;
  Watched watched_[7] = {{"pods", Feed(s_.bucket("pods"))},
                         {"persistentvolumeclaims", Feed(s_.bucket("persistentvolumeclaims"))},
                         {"persistentvolumes", Feed(s_.bucket("persistentvolumes"))},
                         {"nodes", Feed(s_.bucket("nodes"))},
                         {"storageclasses", Feed(s_.bucket("storageclasses"))},
                         {"csidrivers", Feed(s_.bucket("csidrivers"))},
                         {"csistoragecapacities", Feed(s_.bucket("csistoragecapacities"))}};
  std::set<std::string> pending_;              // keys of the pods to schedule
  std::map<std::string, Attempt> attempts_;   // by pod key, while the pod is pending
};

}  // namespace fake
