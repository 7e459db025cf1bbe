// CSIDriver and CSIStorageCapacity (storage.k8s.io/v1) as kube-apiserver and kube-scheduler treat
// them: the CSIDriver defaults (pkg/apis/storage/v1/defaults.go SetDefaults_CSIDriver, with
// SELinuxMountReadWriteOncePod on, as from 1.28) and generation (registry/storage/csidriver
// strategy.go), the validation of both (pkg/apis/storage/validation/validation.go), and the
// volume binding plugin's capacity check (scheduler/framework/plugins/volumebinding/binder.go
// hasEnoughCapacity, capacitySufficient, nodeHasAccess), with CSIStorageCapacity GA (always on).
//
// Known differences: a field of the wrong JSON type (attachRequired: "yes") is not refused as
// the decoder refuses it; AllowInvalidLabelValueInSelector (an update may keep invalid label
// values that an older server let in) is never needed, as the fake never let them in; the
// validation of a CSIDriver's metadata.name is the fake's common one (a DNS subdomain of at most
// 253 characters: ValidateCSIDriverName is NameIsDNSSubdomain).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "test/fake/fake_json.hpp"
#include "test/fake/fake_store.hpp"

namespace fake {

// SetDefaults_CSIDriver: spec.attachRequired true, podInfoOnMount false, storageCapacity false,
// fsGroupPolicy ReadWriteOnceWithFSType, volumeLifecycleModes [Persistent], requiresRepublish
// false, seLinuxMount false, for each that is missing or null.
void DefaultCsiDriver(Json& obj);

// PrepareForCreate and PrepareForUpdate: metadata.generation is 1 on create; on update it is the
// stored one, one more when the spec changes. Clients cannot set it.
void SetCsiDriverGeneration(const Json* cur, Json& next);

// validateCSIDriverSpec: the required booleans (at spec.attachedRequired, as the real path is
// spelled), fsGroupPolicy, tokenRequests (distinct audiences, 10 minutes to 2^32 seconds) and
// volumeLifecycleModes (Persistent or Ephemeral).
void ValidateCsiDriver(const Json& obj, std::vector<FieldError>& errs);

// ValidateCSIDriverUpdate's own part: attachRequired and volumeLifecycleModes are immutable
// (the other fields may change, as they may since 1.24).
void ValidateCsiDriverUpdate(const Json& old_obj, const Json& new_obj, std::vector<FieldError>& errs);

// ValidateCSIStorageCapacity without the metadata: nodeTopology a valid label selector (null
// allowed), storageClassName a DNS subdomain (required: "" is refused as not one), capacity not
// negative. maximumVolumeSize is not validated (as there: a negative one is stored).
void ValidateCsiStorageCapacity(const Json& obj, std::vector<FieldError>& errs);

// ValidateCSIStorageCapacityUpdate: nodeTopology and storageClassName are immutable. The
// nodeTopology message prints the new selector as Go's %#v prints a metav1.LabelSelector.
void ValidateCsiStorageCapacityUpdate(const Json& old_obj, const Json& new_obj, std::vector<FieldError>& errs);

// metav1.LabelSelectorAsSelector(selector).Matches(labels): a null or missing selector matches
// nothing, an empty one everything; one that does not convert (an unknown operator, In or
// NotIn without values) matches nothing (nodeHasAccess logs and answers false). `labels` may be
// null (no labels).
bool SelectorMatches(const Json* selector, const Json* labels);

// capacitySufficient: maximumVolumeSize when set, else capacity, is at least `bytes` (both as
// Quantity.Value()); neither set: not sufficient.
bool CapacitySufficient(const Json& capacity, int64_t bytes);

// hasEnoughCapacity for a claim of class `sc` on `node`: true when the claim requests no storage,
// when no CSIDriver is named as the class's provisioner, or when its spec.storageCapacity is not
// true; otherwise when some CSIStorageCapacity, in any namespace, of the class's name, is
// sufficient for the request and its nodeTopology selects the node's labels. Callers hold s.mu.
bool HasEnoughCapacity(Store& s, const Json& claim, const Json& sc, const Json& node);

}  // namespace fake
