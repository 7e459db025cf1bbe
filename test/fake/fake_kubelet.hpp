// A Node as a kubelet registers its node (pkg/kubelet/kubelet_node_status.go: initialNode's
// well-known labels, then a status with the Ready condition), for tests that need nodes: the
// fake API server models no kubelet, so a test that wants schedulable nodes creates them with
// this. A Node made without it has only what its creator gave it.
#pragma once
#include <picojson.h>

#include <ctime>
#include <map>
#include <string>

namespace fake_kubelet {

// The Node JSON, with the labels kubernetes.io/hostname=<name>, kubernetes.io/os=linux and
// kubernetes.io/arch=amd64 (and `extra_labels`, which win), Ready=True, the Hostname address and
// the kubelet version.
std::string NodeJson(const std::string& name, const std::map<std::string, std::string>& extra_labels = {});

}  // namespace fake_kubelet
