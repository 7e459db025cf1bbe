// meta.k8s.io/v1 Tables, as kube-apiserver answers a request that accepts one (kubectl get's
// `Accept: application/json;as=Table;v=v1;g=meta.k8s.io,...`): the columns and cells of
// pkg/printers/internalversion/printers.go (AddHandlers and the print functions) for the kinds
// the fake serves, made as the server's TableConvertor makes them (with the wide columns, which
// kubectl shows only for -o wide), and each row's object as PartialObjectMetadata
// (includeObject=Metadata, the default). CSIStorageCapacity's registry uses the default
// TableConvertor (rest.NewDefaultTableConvertor): Name and "Created At", a date, not printers.go's
// columns.
//
// Known differences: column descriptions are left empty (the real ones are API doc strings);
// quantities are shown as stored, not in canonical form; a pod's status is its phase or reason
// (no container states are modelled).
#pragma once
#include <algorithm>
#include <cctype>
#include <ctime>
#include <set>
#include <string>
#include <vector>

#include "test/fake/fake_admission.hpp"

namespace fake {
namespace table_detail {

struct Column {
  const char* name;
  int priority = 0;             // 1: shown by kubectl only with -o wide
  const char* type = "string";  // "boolean", "date": how kubectl formats the cells
};

// duration.HumanDuration (apimachinery/pkg/util/duration) of `seconds`.
std::string HumanDuration(long long seconds);

// translateTimestampSince: the age of an RFC 3339 time, "<unknown>" when there is none.
std::string Age(const std::string& rfc3339);

// helper.GetAccessModesAsString: RWO, ROX, RWX, RWOP in that order, each once, unknown modes left out.
std::string AccessModes(const Json& obj, std::initializer_list<std::string_view> path);

// helper.GetPersistentVolume(Claim)Class: the beta annotation first, then spec.storageClassName.
std::string StorageClassOf(const Json& obj);

// The string at the path, or `unset` when it is not there (a nil pointer field).
std::string StrOr(const Json& obj, std::initializer_list<std::string_view> path, const std::string& unset);

inline std::string Phase(const Json& obj) { return IsDeleting(obj) ? "Terminating" : Str(obj, {"status", "phase"}); }

inline std::string Created(const Json& obj) { return Age(Str(obj, {"metadata", "creationTimestamp"})); }

// The elements of the array at path (none when it is not an array).
const JsonArray& Items(const Json& obj, std::initializer_list<std::string_view> path);

std::string OrNone(const Json& obj, std::initializer_list<std::string_view> path);

// printPod's READY: ready containers / containers.
std::string PodReady(const Json& pod);

// printPod's STATUS, without container states: the reason, else the phase; Terminating once deleted.
std::string PodStatus(const Json& pod);

long PodRestarts(const Json& pod);

// printPod's READINESS GATES: gates whose condition is True / gates, "<none>" without any.
std::string PodReadinessGates(const Json& pod);

// printNode's status: Ready or NotReady after the Ready condition (Unknown without one), and
// SchedulingDisabled for a cordoned node.
std::string NodeStatus(const Json& node);

// findNodeRoles: the <role> of node-role.kubernetes.io/<role> labels and the value of a
// kubernetes.io/role label, sorted and joined by commas; "<none>" without any.
std::string NodeRoles(const Json& node);

// The first status.addresses entry of the type, "<none>" without one.
std::string NodeAddress(const Json& node, const std::string& type);

// The columns for a resource type (AddHandlers).
std::vector<Column> Columns(const ResourceType& t);

// One row's cells, in the order of Columns(t) (the print functions).
JsonArray Cells(const ResourceType& t, const Json& o);

}  // namespace table_detail

// The Table of `items` of type t; `meta` is the list's metadata (resourceVersion, continue),
// or for one object its resourceVersion.
Json ToTable(const ResourceType& t, const JsonArray& items, const Json& meta);

}  // namespace fake
