// The bodies of section_clones.hpp (the contracts are there).
#include "test/bench/section_clones.hpp"

#include <linux/magic.h>
#include <sys/vfs.h>

#include <cstdio>
#include <cstdlib>
#include <optional>

#include "test/bench/bursts.hpp"
#include "test/bench/proc_sample.hpp"
#include "test/support/loopfs.hpp"

namespace bench {
namespace {

using harness::Exists;

// The volumes root's instance: its clones, then the bursts with and without a copy running.
// Each kind of burst has a class and a root (pvDir, ALLOWED_PV_DIRS) of its own.
void OnVolumesRoot(const Places& at, Clones* out) {
  struct statfs sf {};
  const bool tmpfs = ::statfs(at.volumes.c_str(), &sf) == 0 && sf.f_type == TMPFS_MAGIC;
  out->rows.push_back({std::string("byte copy on ") + (tmpfs ? "tmpfs" : "the volumes root"), "byte copy"});
  Fake fake(at.work + "/api-clones");
  std::string sources = MakeDir(at.volumes + "/pv-clones"), pv_c = MakeDir(at.volumes + "/pv-clone-bursts-copying"),
              pv_n = MakeDir(at.volumes + "/pv-clone-bursts-none");
  fake.CreateClass(kCloneClass, "Immediate");
  fake.CreateClass("bursts-copying", "Immediate", "\"pvDir\":\"" + pv_c + "\"");
  fake.CreateClass("bursts-none", "Immediate", "\"pvDir\":\"" + pv_n + "\"");
  Provisioner p = StartProvisioner(fake, sources, at.work + "/provisioner-clones.log",
                                   {{"ALLOWED_PV_DIRS", pv_c + "," + pv_n}, {"USAGE_SCAN_INTERVAL", "0"}});
  const pid_t pid = p.proc->pid();
  const Claimed files = MeasureClones(fake, p, sources, &out->rows.back());
  // The copy of each round: started (its temporary directory made) just before the burst; once
  // the burst is done, deleted, which stops it, and gone (with anything the provisioner did for
  // it) before the next burst starts.
  std::optional<Claimed> copy;
  auto temp = [&] { return sources + "/.clone-" + copy->pv(); };
  auto settle = [&] {
    if (!copy) return;
    auto admin = fake.Admin();
    Reply r = admin->Call("DELETE", kClaims + "/" + copy->name);
    if (r.code != 200) throw Failure("delete claim " + copy->name + ": " + std::to_string(r.code) + " " + r.body);
    for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
         Exists(temp()) || Exists(sources + "/" + copy->dir()) ||
         admin->Call("GET", "/api/v1/persistentvolumes/" + copy->pv(), "", false).code != 404;
         SleepMs(5))
      if (std::chrono::steady_clock::now() > end) throw Failure("the clone " + copy->name + " was not gone within 60 s");
    WaitCpuQuiet(pid, std::chrono::milliseconds(300));
    copy.reset();
  };
  int round = 0;
  Target copying{"copying", &fake, {pv_c}, {pid}, nullptr, "bursts-copying"}, idle{"none", &fake, {pv_n}, {pid}, nullptr, "bursts-none"};
  copying.before = [&](bool create) {
    settle();
    if (!create) return;
    copy = CreateCloneClaim(fake, "during" + std::to_string(round++), files.name, nullptr);
    for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60); !Exists(temp()); SleepMs(1))
      if (std::chrono::steady_clock::now() > end) throw Failure("the copy for " + copy->name + " did not start within 60 s");
  };
  copying.after = [&](bool create) { out->copy_running += create && Exists(temp()); };
  idle.before = [&](bool) { settle(); };
  Alternate(copying, idle, kCloneBurst, kCloneRounds, [&](const Target& t, bool create, const Burst& b) {
    if (create) (t.after ? out->create_copying : out->create_not_copying).push_back(b.seconds);
  });
  settle();
}

// A loop filesystem each for the other methods, in sparse images sized for both sources and a
// byte copy of each (and the metadata of 200 000 files).
void OnLoopFilesystems(const Places& at, Clones* out) {
  const std::string image_at = Absolute(at.work) + "/clone-";
  struct Method {
    const char *label, *method, *type, *size, *mkfs_args, *parameters;
  };
  for (const Method& m : {Method{"byte copy on ext4", "byte copy", "ext4", "6G", "", ""},
                          Method{"reflink copy on XFS (reflink=1)", "reflink copy", "xfs", "4G", "-m reflink=1", ""},
                          Method{"btrfs snapshot (quota \"true\")", "btrfs snapshot", "btrfs", "6G", "", "\"quota\":\"true\""}}) {
    out->rows.push_back({m.label, m.method});
    harness::LoopFs fs(image_at + m.type, m.type, m.size, m.mkfs_args);
    if (!fs.mounted) {
      out->rows.back().skipped = fs.why;
    } else if (std::string(m.type) == "btrfs" && harness::LoopFs::Sh("btrfs quota enable " + fs.dir) != 0) {
      out->rows.back().skipped = "btrfs quota enable failed";
    } else {
      Fake fake(at.work + "/api-clone-" + m.type);
      fake.CreateClass(kCloneClass, "Immediate", m.parameters);
      Provisioner p = StartProvisioner(fake, fs.dir, at.work + "/provisioner-clone-" + m.type + ".log", {{"USAGE_SCAN_INTERVAL", "0"}});
      MeasureClones(fake, p, fs.dir, &out->rows.back());
    }
    if (!out->rows.back().skipped.empty()) std::printf("  %-36s skipped: %s\n", m.label, out->rows.back().skipped.c_str());
  }
}

}  // namespace

Clones RunClones(const Places& at) {
  std::printf("bench: clones of 1 GiB and of %d files, by each method; %d rounds of %d claims at once while a copy "
              "runs, and without\n", kCloneFiles, kCloneRounds, kCloneBurst);
  std::fflush(stdout);
  Clones out;
  OnVolumesRoot(at, &out);
  std::system(("rm -rf '" + at.volumes + "'/pv-clone*").c_str());
  OnLoopFilesystems(at, &out);
  return out;
}

void ReportClones(const Clones& c, Report* rep, picojson::object* json) {
  auto median = [](const std::vector<double>& v) { return Percentile(v, 0.5); };
  rep->Section("clones: claim create -> Bound (the provisioner's copy time, clone_seconds_total), of 1 GiB in " +
               std::to_string(kCloneBigFiles) + " files / of " + std::to_string(kCloneFiles) + " files of 4 KiB");
  picojson::object clones;  // by filesystem: seconds from create to Bound, and of the provisioner's copy
  for (const CloneRow& r : c.rows) {
    if (!r.skipped.empty()) {
      rep->Add(r.label, "skipped: " + r.skipped);
      continue;
    }
    const double per_gib = static_cast<double>(1ULL << 30) / static_cast<double>(kCloneBytes), per_files = 100000.0 / kCloneFiles;
    std::string value = Fmt("%.3f", r.gib.bound * per_gib) + Fmt(" (%.3f)", r.gib.copy * per_gib) +
                        Fmt(" / %.3f", r.files.bound * per_files) + Fmt(" (%.3f) s", r.files.copy * per_files);
    if (r.gib.method != r.expected || r.files.method != r.expected)
      value += " NOT " + r.expected + ": " + r.gib.method + " / " + r.files.method;
    rep->Add(r.label + ", per GiB / 100 000 files", value);
    picojson::object o;
    o["method"] = picojson::value(r.gib.method);
    o["bound_seconds_1gib"] = picojson::value(r.gib.bound);
    o["copy_seconds_1gib"] = picojson::value(r.gib.copy);
    o["bound_seconds_files"] = picojson::value(r.files.bound);  // kCloneFiles files
    o["copy_seconds_files"] = picojson::value(r.files.copy);
    clones[r.label] = picojson::value(o);
  }
  rep->Section(std::to_string(kCloneBurst) + " claims at once while a byte copy of " + std::to_string(kCloneFiles) +
               " files runs on the same instance / none, " + std::to_string(c.create_copying.size()) + " rounds (medians)");
  const double ratio = median(c.create_copying) / median(c.create_not_copying);
  rep->Add("create until all Bound: copy running / none",
           Fmt("%.3f", median(c.create_copying)) + Fmt(" / %.3f s", median(c.create_not_copying)) + Fmt(" = %.2fx", ratio),
           "<= 1.1x", ratio <= 1.1);
  rep->Add("copy still running at the burst's end",
           std::to_string(c.copy_running) + " of " + std::to_string(c.create_copying.size()) + " bursts");
  (*json)["clones"] = picojson::value(clones);
  (*json)["create_seconds_copying"] = Array(c.create_copying);  // kCloneBurst claims while a copy runs
  (*json)["create_seconds_not_copying"] = Array(c.create_not_copying);
}

}  // namespace bench
