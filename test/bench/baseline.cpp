// The bodies of baseline.hpp (the contracts are there).
#include "test/bench/baseline.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace bench {

Baseline::Baseline(const Fake& fake, std::string pv_dir) : pv_dir_(std::move(pv_dir)) {
  for (int i = 0; i < kBaselineThreads; ++i) {
    std::shared_ptr<Api> api = fake.ServiceAccount();
    threads_.emplace_back([this, api] { Run(*api); });
  }
}

Baseline::~Baseline() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void Baseline::Push(bool create, const Claimed& c) {
  {
    std::lock_guard<std::mutex> l(mu_);
    jobs_.push_back({create, c});
  }
  cv_.notify_one();
}

std::string Baseline::error() {
  std::lock_guard<std::mutex> l(mu_);
  return error_;
}

void Baseline::Run(Api& api) {
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    cv_.wait(l, [this] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;
    auto [create, c] = std::move(jobs_.front());
    jobs_.pop_front();
    l.unlock();
    std::string path = pv_dir_ + "/" + c.dir(), err;
    if (create) {
      if (::mkdir(path.c_str(), 0777) != 0) err = "mkdir " + path + ": " + std::strerror(errno);
      Reply r = err.empty() ? api.Call("POST", "/api/v1/persistentvolumes", VolumeJson(c, pv_dir_, false), false) : Reply{201};
      if (r.code != 201) err = "create " + c.pv() + ": " + std::to_string(r.code) + " " + r.body;
    } else {
      if (::rmdir(path.c_str()) != 0) err = "rmdir " + path + ": " + std::strerror(errno);
      Reply r = err.empty() ? api.Call("DELETE", "/api/v1/persistentvolumes/" + c.pv(), "", false) : Reply{200};
      if (r.code != 200) err = "delete " + c.pv() + ": " + std::to_string(r.code) + " " + r.body;
    }
    l.lock();
    if (!err.empty() && error_.empty()) error_ = err;
  }
}

}  // namespace bench
