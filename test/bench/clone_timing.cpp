// The bodies of clone_timing.hpp (the contracts are there).
#include "test/bench/clone_timing.hpp"

#include <cstdio>

#include "test/bench/trees.hpp"

namespace bench {
namespace {

const std::string kCloneSeconds = "hostpath_provisioner_clone_seconds_total";

// Clones `source` as claim PREFIX-0 and times it.
CloneTimes TimeClone(const Fake& fake, const Provisioner& p, const Claimed& source, const std::string& prefix) {
  CloneTimes t;
  const double copy0 = MetricValue(p.port, kCloneSeconds);
  Claimed c = CreateCloneClaim(fake, prefix, source.name, &t.bound);
  t.copy = MetricValue(p.port, kCloneSeconds) - copy0;
  Reply pv = fake.Admin()->Call("GET", "/api/v1/persistentvolumes/" + c.pv());
  t.method = Str(pv.json, {"metadata", "annotations", "hostpath-provisioner.io/clone-method"});
  return t;
}

}  // namespace

Claimed CreateCloneClaim(const Fake& fake, const std::string& prefix, const std::string& source, double* seconds) {
  auto admin = fake.Admin();
  std::string query = WaitQuery(*admin, true, prefix), name = prefix + "-0";
  const int64_t t0 = NowNs();
  Reply r = admin->Call("POST", kClaims, ClaimJson(name, kCloneClass, "", kCloneSize, source));
  if (r.code != 201) throw Failure("create claim " + name + ": " + std::to_string(r.code) + " " + r.body);
  if (seconds) *seconds = static_cast<double>(WaitInFake(*admin, query, 1) - t0) / 1e9;
  return {name, Str(r.json, {"metadata", "uid"})};
}

Claimed MeasureClones(const Fake& fake, const Provisioner& p, const std::string& root, CloneRow* row) {
  Claimed big = CreateCloneClaim(fake, "big", "", nullptr), files = CreateCloneClaim(fake, "files", "", nullptr);
  auto admin = fake.Admin();
  WaitInFake(*admin, "resource=persistentvolumeclaims&until=Bound&prefix=big-", 1);
  WaitInFake(*admin, "resource=persistentvolumeclaims&until=Bound&prefix=files-", 1);
  for (int i = 0; i < kCloneBigFiles; ++i)
    WriteRandom(root + "/" + big.dir() + "/data" + std::to_string(i), kCloneBytes / kCloneBigFiles, i + 1);
  MakeTree(root + "/" + files.dir(), kCloneDirs, kCloneFiles / kCloneDirs, kCloneFileBytes);
  SyncFs(root);
  row->gib = TimeClone(fake, p, big, "cbig");
  row->files = TimeClone(fake, p, files, "cfiles");
  std::printf("  %-36s 1 GiB: %.3f s (its copy %.3f s), %d files: %.3f s (its copy %.3f s)%s\n", row->label.c_str(),
              row->gib.bound, row->gib.copy, kCloneFiles, row->files.bound, row->files.copy,
              row->gib.method == row->expected && row->files.method == row->expected
                  ? ""
                  : (", method " + row->gib.method + " / " + row->files.method).c_str());
  std::fflush(stdout);
  return files;
}

}  // namespace bench
