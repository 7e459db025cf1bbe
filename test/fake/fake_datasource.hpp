// A claim's spec.dataSource and spec.dataSourceRef as a Kubernetes 1.24 API server handles them,
// with the AnyVolumeDataSource gate beta and on (its 1.24 default):
// - the registry strategy (pkg/registry/core/persistentvolumeclaim/strategy.go PrepareForCreate /
//   PrepareForUpdate) calls pkg/api/persistentvolumeclaim/util.go: DropDisabledFields (drops
//   dataSourceRef only with the gate off: nothing here), EnforceDataSourceBackwardsCompatibility
//   and NormalizeDataSources;
// - validation (pkg/apis/core/validation/validation.go, 1.24: validateDataSource, used for both
//   fields, and the "must match dataSourceRef" check in ValidatePersistentVolumeClaimSpec).
// Later servers differ (1.26 adds dataSourceRef.namespace and the text "must be
// 'PersistentVolumeClaim' when referencing the default apiGroup", 1.29 an apiGroup DNS check);
// this is 1.24.
#pragma once
#include <string>
#include <vector>

#include "test/fake/fake_json.hpp"

namespace fake {

// The data-source part of the claim strategy's PrepareForCreate (old_claim null) and
// PrepareForUpdate (old_claim the stored claim): EnforceDataSourceBackwardsCompatibility drops
// a dataSource that is neither a core PersistentVolumeClaim nor a snapshot.storage.k8s.io
// VolumeSnapshot, silently, unless dataSourceRef is set or the old claim had a data source;
// then NormalizeDataSources fills the unset one of the pair from the other.
void PrepareClaimDataSources(Json& claim, const Json* old_claim);

// PrepareForUpdate also normalizes the old claim before the update is validated against it
// ("so that objects saved from an earlier version will pass validation").
void NormalizeClaimDataSources(Json& spec);

// ValidatePersistentVolumeClaimSpec's data-source checks (1.24). The mismatch error passes a
// *field.Path as the bad value: ErrorBody dereferences it and, field.Path having no String()
// on the value, prints it with %#v, parent pointer included. The real address varies from call
// to call; this one is fixed.
void ValidateClaimDataSources(const Json& spec, std::vector<FieldError>& errs);

}  // namespace fake
