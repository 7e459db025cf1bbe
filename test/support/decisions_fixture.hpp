// What the unit tests of the pure decisions start from: a configuration, a class of this
// provisioner and a claim waiting for a volume, each as a test then changes it.
#pragma once
#include <map>
#include <string>

#include "base/config.hpp"
#include "base/objects.hpp"

// PV_DIR /var/kubernetes; node-aware when `node` is given (NODE_NAME).
Config TestConfig(const std::string& node = "");

// The class "hostpath" of this provisioner, with `binding` (volumeBindingMode) and `params`.
StorageClass OurClass(const std::string& binding = "Immediate", std::map<std::string, std::string> params = {});

// The Pending claim default/data of class "hostpath", ReadWriteOnce, 1Gi, annotated for this
// provisioner (uid 1b2c3d4e-0000-4000-8000-000000000001).
Claim OurClaim();
