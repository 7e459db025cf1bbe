// The bodies of fake_kubelet.hpp (the contracts are there).
#include "test/fake/fake_kubelet.hpp"

#include <picojson.h>

#include <ctime>
#include <map>
#include <string>

namespace fake_kubelet {

std::string NodeJson(const std::string& name, const std::map<std::string, std::string>& extra_labels) {
  using picojson::object;
  using picojson::value;
  char now[32];
  std::time_t t = std::time(nullptr);
  std::strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  object labels;
  labels["kubernetes.io/hostname"] = value(name);
  labels["kubernetes.io/os"] = value("linux");
  labels["kubernetes.io/arch"] = value("amd64");
  for (const auto& [k, v] : extra_labels) labels[k] = value(v);
  object meta;
  meta["name"] = value(name);
  meta["labels"] = value(labels);
  object ready;
  ready["type"] = value("Ready");
  ready["status"] = value("True");
  ready["reason"] = value("KubeletReady");
  ready["message"] = value("kubelet is posting ready status");
  ready["lastHeartbeatTime"] = value(now);
  ready["lastTransitionTime"] = value(now);
  object address;
  address["type"] = value("Hostname");
  address["address"] = value(name);
  object info;
  info["kubeletVersion"] = value("v1.32.0-fake");  // the fake API server's /version
  info["operatingSystem"] = value("linux");
  info["architecture"] = value("amd64");
  object status;
  status["conditions"] = value(picojson::array{value(ready)});
  status["addresses"] = value(picojson::array{value(address)});
  status["nodeInfo"] = value(info);
  object node;
  node["apiVersion"] = value("v1");
  node["kind"] = value("Node");
  node["metadata"] = value(meta);
  node["status"] = value(status);
  return value(node).serialize();
}

}  // namespace fake_kubelet
