// The bodies of claims.hpp (the contracts are there).
#include "test/bench/claims.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

namespace bench {

std::string ClaimJson(const std::string& name, const std::string& cls, const std::string& node, const std::string& size,
                      const std::string& clone_of) {
  return R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":")" + name + R"(","namespace":")" + kNs + "\"" +
         (node.empty() ? "" : R"(,"annotations":{"volume.kubernetes.io/selected-node":")" + node + "\"}") +
         R"(},"spec":{"storageClassName":")" + cls + R"(","accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":")" +
         size + "\"}}" +
         (clone_of.empty() ? "" : R"(,"dataSource":{"kind":"PersistentVolumeClaim","name":")" + clone_of + "\"}") + "}}";
}

std::string VolumeJson(const Claimed& c, const std::string& pv_dir, bool finalizer) {
  return R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":")" + c.pv() +
         R"(","annotations":{"pv.kubernetes.io/provisioned-by":")" + kProvisionerName + "\"}" +
         (finalizer ? R"(,"finalizers":["external-provisioner.volume.kubernetes.io/finalizer"])" : "") +
         R"(},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"volumeMode":"Filesystem",)"
         R"("persistentVolumeReclaimPolicy":"Delete","storageClassName":"hostpath",)"
         R"("claimRef":{"kind":"PersistentVolumeClaim","apiVersion":"v1","namespace":")" +
         kNs + R"(","name":")" + c.name + R"(","uid":")" + c.uid + R"("},"hostPath":{"path":")" + pv_dir + "/" + c.dir() +
         R"(","type":"Directory"}}})";
}

void SendBatches(const Fake& fake, const std::vector<std::array<std::string, 3>>& requests,
                 const std::function<void(size_t, const picojson::value&)>& done) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::string err;
  std::vector<std::thread> threads;
  for (int t = 0; t < kClientThreads; ++t)
    threads.emplace_back([&, t] {
      Api& admin = fake.Client(t);
      for (size_t begin; (begin = next.fetch_add(kBatch)) < requests.size();) {
        size_t end = std::min(requests.size(), begin + kBatch);
        std::string body = "{\"requests\":[";
        for (size_t i = begin; i < end; ++i)
          body += std::string(i == begin ? "" : ",") + "{\"method\":\"" + requests[i][0] + "\",\"path\":" +
                  picojson::value(requests[i][1]).serialize() + ",\"body\":" + picojson::value(requests[i][2]).serialize() + "}";
        Reply r = admin.Call("POST", "/fake/batch", body + "]}");
        if (r.code != 200 || !r.json.is<picojson::array>() || r.json.get<picojson::array>().size() != end - begin) {
          std::lock_guard<std::mutex> l(mu);
          err = "POST /fake/batch: " + std::to_string(r.code) + " " + r.body.substr(0, 300);
          next = requests.size();
          return;
        }
        for (size_t i = begin; i < end; ++i) done(i, r.json.get<picojson::array>()[i - begin]);
      }
    });
  for (auto& t : threads) t.join();
  if (!err.empty()) throw Failure(err);
}

std::vector<Claimed> CreateClaims(const Fake& fake, const std::string& prefix, int n,
                                  const std::function<void(const Claimed&)>& on_created, const std::string& cls, int nodes) {
  std::vector<Claimed> out(n);
  std::vector<std::array<std::string, 3>> requests;
  for (int i = 0; i < n; ++i)
    requests.push_back({"POST", kClaims,
                        ClaimJson(prefix + "-" + std::to_string(i), cls, nodes > 0 ? "node-" + std::to_string(i % nodes) : "")});
  SendBatches(fake, requests, [&](size_t i, const picojson::value& res) {
    out[i] = {prefix + "-" + std::to_string(i), Str(res, {"uid"})};
    if (Code(res) != 201) throw Failure("create claim " + out[i].name + ": " + res.serialize());
    if (on_created) on_created(out[i]);
  });
  return out;
}

void DeleteClaims(const Fake& fake, const std::vector<Claimed>& claims, const std::function<void(const Claimed&)>& on_deleted) {
  std::vector<std::array<std::string, 3>> requests;
  for (const Claimed& c : claims) requests.push_back({"DELETE", kClaims + "/" + c.name, ""});
  SendBatches(fake, requests, [&](size_t i, const picojson::value& res) {
    if (Code(res) != 200) throw Failure("delete claim " + claims[i].name + ": " + res.serialize());
    if (on_deleted) on_deleted(claims[i]);
  });
}

}  // namespace bench
