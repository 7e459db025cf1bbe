// What the real API server does to a pod before storing it, reduced to what scheduling and
// volume tests use: defaulting (pkg/apis/core/v1/defaults.go: SetDefaults_PodSpec,
// SetDefaults_Container, SetDefaults_Volume), the strategy's status on create (phase Pending), and
// validation (pkg/apis/core/validation/validation.go: ValidatePodCreate, ValidatePodUpdate).
//
// Known differences: no admission plugins add anything (service account token volume, default
// tolerations, priority); status.qosClass is not set; only the fields below are validated; a
// refused update's message has no diff of the specs after it.
#pragma once
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "test/fake/fake_names.hpp"
#include "test/fake/fake_nodeselector.hpp"

namespace fake {

// The claims the pod's volumes name (volumes[].persistentVolumeClaim.claimName), in volume order.
std::vector<std::string> PodClaimNames(const Json& pod);

// SetDefaults_PodSpec, SetDefaults_Container and SetDefaults_Volume for the fields clients see.
void DefaultPod(Json& pod);

// The pod strategy's PrepareForCreate: the status a new pod has, whatever was sent.
void ResetPodStatus(Json& pod);

// ValidatePodCreate for volumes (names, claim names), containers (names, images, mounts), the
// restart policy and the required node affinity.
void ValidatePod(const Json& pod, std::vector<FieldError>& errs);

// ValidatePodUpdate: the spec may change only in its containers' images, activeDeadlineSeconds
// and (added) tolerations; spec.nodeName is set by binding, never by an update.
void ValidatePodUpdate(const Json& old_pod, const Json& new_pod, std::vector<FieldError>& errs);

}  // namespace fake
