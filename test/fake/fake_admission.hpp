// What the real API server does to an object before storing it: defaulting (pkg/apis/*/v1
// defaults.go), the registry strategies' status reset and /status updates, admission plugins
// (DefaultStorageClass, StorageObjectInUseProtection, PersistentVolumeClaimResize,
// TaintNodesByCondition) and validation (pkg/apis/core/validation/validation.go; CSIDriver and
// CSIStorageCapacity: fake_csi.hpp), reduced to the fields our clients use.
#pragma once
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "test/fake/fake_csi.hpp"
#include "test/fake/fake_datasource.hpp"
#include "test/fake/fake_names.hpp"
#include "test/fake/fake_nodeselector.hpp"
#include "test/fake/fake_pods.hpp"
#include "test/fake/fake_quantity.hpp"
#include "test/fake/fake_store.hpp"

namespace fake {

inline constexpr const char* kPvcProtectionFinalizer = "kubernetes.io/pvc-protection";
inline constexpr const char* kPvProtectionFinalizer = "kubernetes.io/pv-protection";
inline constexpr const char* kTaintNotReady = "node.kubernetes.io/not-ready";
inline constexpr const char* kIsDefaultClass = "storageclass.kubernetes.io/is-default-class";
inline constexpr const char* kBetaIsDefaultClass = "storageclass.beta.kubernetes.io/is-default-class";

// metav1.MicroTime's UnmarshalJSON: null, or a string time.Parse reads with RFC3339Micro
// ("2006-01-02T15:04:05.000000Z07:00": exactly six fraction digits). The error as Go's
// time.ParseError words it, or "" when the value is accepted.
std::string MicroTimeError(const Json& v);

// Decodes the resource.Quantity values of obj's quantity maps (and a CSIStorageCapacity's
// capacity and maximumVolumeSize, dropped when null) and writes them back as
// Quantity.String() does; the error of the first that does not parse (quantity.go's
// ErrFormatWrong or ErrSuffix), or "".
std::string CanonicalQuantities(const ResourceType& t, Json& obj);

// Drops the top-level members type t does not have, as decoding into the Go type does.
void PruneUnknownFields(const ResourceType& t, Json& obj);

// The apiVersions the scheme decodes type t from (the served one, and for storage and
// coordination their v1beta1).
bool KnownApiVersion(const ResourceType& t, const std::string& api_version);

// What the decoder refuses (400 BadRequest) in a body for type t, as the real server's message
// (serializer errors: "Kind in version \"v1\" cannot be handled as a Kind: ..."), or "";
// what it accepts, it leaves as the decoded object would be written (CanonicalQuantities).
std::string DecodeError(const ResourceType& t, Json& obj);

// The validation errors of obj (already defaulted) as type t; empty when valid.
std::vector<FieldError> Validate(const ResourceType& t, const Json& obj);

// spec.resources.requests.storage of a claim in bytes; 0 when missing (Go's zero Quantity).
double StorageRequest(const Json& claim);

// ValidatePersistentVolumeClaimUpdate / ValidatePersistentVolumeUpdate, reduced: a claim's spec is
// immutable except a bound claim's storage request (the phase is the stored one: the update
// keeps the status), a first volumeName, a first storageClassName and volumeAttributesClassName
// (these two as later servers allow), and its storage request may not shrink (1.24, with
// RecoverVolumeExpansionFailure off); a volume's source is immutable, and so is its node
// affinity once set; a pod's spec as ValidatePodUpdate allows (fake_pods.hpp); a CSIDriver's and a
// CSIStorageCapacity's as fake_csi.hpp says. Empty when the update is allowed. The real "spec is
// immutable" message goes on with a diff of the specs.
std::vector<FieldError> ValidateUpdate(const ResourceType& t, const Json& old_obj, const Json& new_obj);

// The defaults the real API server fills in (SetDefaults_* for the fields our clients see).
void ApplyDefaults(const ResourceType& t, Json& obj);

void AddFinalizer(Json& obj, const std::string& finalizer);

// Removes finalizer; drops the list when it becomes empty. True when it was there.
bool RemoveFinalizer(Json& obj, const std::string& finalizer);

// The default StorageClass's name (the newest of those annotated default), or "".
std::string DefaultClassName(Store& s);

// Create-time strategy and admission: status reset (PrepareForCreate), protection finalizers,
// DefaultStorageClass. Callers hold s.mu.
void AdmitCreate(Store& s, const ResourceType& t, Json& obj);

inline constexpr const char* kBetaStorageClassAnn = "volume.beta.kubernetes.io/storage-class";

// helper.GetPersistentVolumeClaimClass: the beta annotation first, then spec.storageClassName.
std::string ClaimClass(const Json& claim);

// The PersistentVolumeClaimResize admission plugin (plugin/pkg/admission/storage/persistentvolume/
// resize/admission.go, Validate), on updates of a claim itself after they were validated: a
// storage request may grow only while the claim is bound, and only when its class, the same
// before and after, has allowVolumeExpansion: true. Why it refuses (the server answers 403
// Forbidden), or "". Callers hold s.mu.
std::string ResizeRefusal(Store& s, const Json& old_claim, const Json& new_claim);

// The status strategies' PrepareForUpdate (pkg/registry/core/*/strategy.go): an update through
// /status keeps the stored spec (and a pod's ownerReferences); its metadata goes through as on
// the main resource (no status strategy of these types resets it). A claim's
// status.allocatedResources and status.resizeStatus need the RecoverVolumeExpansionFailure
// gate, alpha and off in 1.24: dropped unless the stored claim has them
// (pvcutil.DropDisabledFieldsFromStatus).
void PrepareStatusUpdate(const ResourceType& t, const Json& cur, Json& next);

}  // namespace fake
