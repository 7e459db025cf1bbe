// What the unit tests of the decisions start from: the bodies (decisions_fixture.hpp).
#include "test/support/decisions_fixture.hpp"

#include <utility>

Config TestConfig(const std::string& node) {
  Config c;
  c.pv_dir = "/var/kubernetes";
  c.node_name = node;
  return c;
}

StorageClass OurClass(const std::string& binding, std::map<std::string, std::string> params) {
  StorageClass sc;
  sc.meta.name = "hostpath";
  sc.provisioner = kDefaultProvisionerName;
  sc.volume_binding_mode = binding;
  sc.parameters = std::move(params);
  return sc;
}

Claim OurClaim() {
  Claim c;
  c.meta.name = "data";
  c.meta.namespace_ = "default";
  c.meta.uid = "1b2c3d4e-0000-4000-8000-000000000001";
  c.meta.annotations[ann::kStorageProvisioner] = kDefaultProvisionerName;
  c.has_storage_class_name = true;
  c.storage_class_name = "hostpath";
  c.access_modes = {"ReadWriteOnce"};
  c.storage_request = "1Gi";
  c.phase = "Pending";
  return c;
}
