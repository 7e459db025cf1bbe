// Packed cache records: every field of every cached struct survives Pack then Unpack.
#include <catch2/catch.hpp>

#include "packed.hpp"

namespace {

// A new field in objects.hpp changes these sizes: add it to packed.hpp's visitor and to the
// checks below (sizes of libstdc++ on x86_64, where the tests run).
static_assert(sizeof(ObjectMeta) == 4 * 32 + 2 * 48 + 24 + 8, "ObjectMeta changed: update packed.hpp");
static_assert(sizeof(Claim) == sizeof(ObjectMeta) + 8 + 32 + 24 + 3 * 32 + 8 + 32, "Claim changed: update packed.hpp");
static_assert(sizeof(Volume) == sizeof(ObjectMeta) + 32 + 24 + 3 * 32 + 24 + 8 + 3 * 32 + 3 * 32,
              "Volume changed: update packed.hpp");
static_assert(sizeof(StorageClass) == sizeof(ObjectMeta) + 3 * 32 + 48 + 24, "StorageClass changed: update packed.hpp");

ObjectMeta Meta(const std::string& tag) {
  ObjectMeta m;
  m.name = tag + "-name";
  m.namespace_ = tag + "-ns";
  m.uid = tag + "-uid-0123456789abcdef0123456789abcdef";
  m.resource_version = "123456";
  m.annotations = {{"a/one", "1"}, {"a/two", std::string(300, 'x')}, {"empty", ""}};
  m.labels = {{"l", "v"}};
  m.finalizers = {"f/one", "f/two"};
  m.deleting = true;
  return m;
}

void CheckMeta(const ObjectMeta& got, const ObjectMeta& want) {
  CHECK(got.name == want.name);
  CHECK(got.namespace_ == want.namespace_);
  CHECK(got.uid == want.uid);
  CHECK(got.resource_version == want.resource_version);
  CHECK(got.annotations == want.annotations);
  CHECK(got.labels == want.labels);
  CHECK(got.finalizers == want.finalizers);
  CHECK(got.deleting == want.deleting);
}

}  // namespace

TEST_CASE("Pack/Unpack: a claim with every field set", "[packed]") {
  Claim c;
  c.meta = Meta("claim");
  c.has_storage_class_name = true;
  c.storage_class_name = "hostpath";
  c.access_modes = {"ReadWriteOnce", "ReadOnlyMany"};
  c.volume_mode = "Filesystem";
  c.storage_request = "1Gi";
  c.volume_name = "pvc-1";
  c.has_selector = true;
  c.has_data_source = true;
  c.phase = "Pending";
  const std::string record = Pack(c);
  Claim got = Unpack<Claim>(record);
  CheckMeta(got.meta, c.meta);
  CHECK(got.has_storage_class_name);
  CHECK(got.storage_class_name == "hostpath");
  CHECK(got.access_modes == c.access_modes);
  CHECK(got.volume_mode == "Filesystem");
  CHECK(got.storage_request == "1Gi");
  CHECK(got.volume_name == "pvc-1");
  CHECK(got.has_selector);
  CHECK(got.has_data_source);
  CHECK(got.phase == "Pending");
  CHECK(Pack(got) == record);
  // The record is about the size of its text, not of the struct.
  CHECK(record.size() < 600);
  CHECK(record.capacity() == record.size());
}

TEST_CASE("Pack/Unpack: a volume with every field set", "[packed]") {
  Volume v;
  v.meta = Meta("volume");
  v.capacity = "5Gi";
  v.access_modes = {"ReadWriteOnce"};
  v.volume_mode = "Block";
  v.storage_class_name = "hostpath";
  v.reclaim_policy = "Retain";
  v.mount_options = {"ro", "noatime"};
  v.has_claim_ref = true;
  v.claim_ref = {"apps", "data", "uid-1"};
  v.host_path = "/var/kubernetes/apps-data-pvc-1";
  v.host_path_type = "DirectoryOrCreate";
  v.phase = "Released";
  Volume got = Unpack<Volume>(Pack(v));
  CheckMeta(got.meta, v.meta);
  CHECK(got.capacity == "5Gi");
  CHECK(got.access_modes == v.access_modes);
  CHECK(got.volume_mode == "Block");
  CHECK(got.storage_class_name == "hostpath");
  CHECK(got.reclaim_policy == "Retain");
  CHECK(got.mount_options == v.mount_options);
  CHECK(got.has_claim_ref);
  CHECK(got.claim_ref.namespace_ == "apps");
  CHECK(got.claim_ref.name == "data");
  CHECK(got.claim_ref.uid == "uid-1");
  CHECK(got.host_path == v.host_path);
  CHECK(got.host_path_type == "DirectoryOrCreate");
  CHECK(got.phase == "Released");
}

TEST_CASE("Pack/Unpack: a storage class with every field set", "[packed]") {
  StorageClass s;
  s.meta = Meta("class");
  s.provisioner = "hostpath-provisioner.io/hostpath";
  s.reclaim_policy = "Delete";
  s.volume_binding_mode = "WaitForFirstConsumer";
  s.parameters = {{"uid", "1000"}, {"mode", "0770"}};
  s.mount_options = {"noexec"};
  StorageClass got = Unpack<StorageClass>(Pack(s));
  CheckMeta(got.meta, s.meta);
  CHECK(got.provisioner == s.provisioner);
  CHECK(got.reclaim_policy == "Delete");
  CHECK(got.volume_binding_mode == "WaitForFirstConsumer");
  CHECK(got.parameters == s.parameters);
  CHECK(got.mount_options == s.mount_options);
}

TEST_CASE("Pack/Unpack: empty objects, long strings and cut records", "[packed]") {
  Claim empty = Unpack<Claim>(Pack(Claim{}));
  CHECK(empty.meta.name.empty());
  CHECK_FALSE(empty.meta.deleting);
  CHECK(empty.access_modes.empty());

  Volume big;
  big.meta.name = std::string(100000, 'n');  // a length that takes three bytes
  big.phase = "Bound";
  Volume got = Unpack<Volume>(Pack(big));
  CHECK(got.meta.name == big.meta.name);
  CHECK(got.phase == "Bound");

  // A record cut anywhere reads as a prefix of the fields, never past its end.
  const std::string record = Pack(big);
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{50000}, record.size() - 1}) {
    Volume part = Unpack<Volume>(record.substr(0, n));
    CHECK(part.meta.name.size() <= n);
    CHECK(part.phase != "Bound");
  }
}
