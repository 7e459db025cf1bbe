// core/v1 NodeSelector (a PV's spec.nodeAffinity.required, a pod's required node affinity):
// validated as pkg/apis/core/validation/validation.go does it in Kubernetes 1.24
// (ValidateNodeSelector, ValidateNodeSelectorTerm, ValidateNodeSelectorRequirement,
// ValidateNodeFieldSelectorRequirement), and matched against a node as
// component-helpers/scheduling/corev1/nodeaffinity does it.
#pragma once
#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "test/fake/fake_names.hpp"

namespace fake {

// ValidateNodeSelectorRequirement: the operator and its values, then the key (a qualified name).
// Gt and Lt need exactly one value; that it is an integer is only found out when matching.
void ValidateNodeSelectorRequirement(const Json& req, const std::string& path, std::vector<FieldError>& errs);

// ValidateNodeFieldSelectorRequirement: metadata.name In or NotIn one node name.
void ValidateNodeFieldSelectorRequirement(const Json& req, const std::string& path, std::vector<FieldError>& errs);

// ValidateNodeSelector: at least one term; every requirement of every term.
void ValidateNodeSelector(const Json& selector, const std::string& path, std::vector<FieldError>& errs);

// Whether a node with these labels (an object, or null) and this name matches the selector: any
// of its terms, a term when all its requirements hold; a term without requirements matches nothing.
bool MatchesNodeSelector(const Json& selector, const Json* labels, const std::string& node_name);

}  // namespace fake
