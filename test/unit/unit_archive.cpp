// Archives (class parameter onDelete: "archive"): the names that carry their expiry
// (decide/archive_name.hpp), the class parameters and what the PV carries of them, and the
// move into the archive folder on a real directory (fs/archive_dir.hpp).
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "decide/archive_name.hpp"
#include "decide/reconcile.hpp"
#include "fs/archive_dir.hpp"
#include "test/support/decisions_fixture.hpp"
#include "test/support/harness.hpp"

namespace {

constexpr int64_t kNov27 = 1795803300;  // 2026-11-27T18:15:00Z
const std::string kDir = "default-data-pvc-1b2c3d4e-0000-4000-8000-000000000001";

}  // namespace

TEST_CASE("archive names carry the times of archiving and expiry, in UTC", "[archive]") {
  CHECK(ArchiveTime(kNov27) == "20261127T181500Z");
  CHECK(ArchiveName(kDir, kNov27, 7 * 24 * 3600) == kDir + "--20261127T181500Z--until-20261204T181500Z");
  CHECK(ArchiveName(kDir, kNov27, 0) == kDir + "--20261127T181500Z--keep");
  CHECK(ArchiveName(kDir, kNov27, 2, 3) == kDir + "--20261127T181500Z--until-20261127T181502Z--3");
  CHECK(ArchiveName("team-a/db", kNov27, 0) == "team-a_db--20261127T181500Z--keep");
  CHECK(ArchivePrefix("team-a/db") == "team-a_db--");
}

TEST_CASE("archive names read back as made; anything else is not an archive's", "[archive]") {
  struct Row {
    const char* name;
    int64_t keep;
    int counter;
  } rows[] = {{"kept for a week", 7 * 24 * 3600, 1}, {"kept for ever", 0, 1}, {"a second one that second", 60, 2},
              {"for ever, a tenth", 0, 10}};
  for (const Row& r : rows) {
    INFO(r.name);
    const std::string name = ArchiveName("ns/a--b", kNov27, r.keep, r.counter);
    std::optional<ArchiveNameParts> parts = ParseArchiveName(name);
    REQUIRE(parts);
    CHECK(parts->dir == "ns_a--b");
    CHECK(parts->archived_at == kNov27);
    CHECK(parts->keep == (r.keep == 0));
    if (r.keep > 0) CHECK(parts->expires_at == kNov27 + r.keep);
  }
  const char* bad[] = {
      "lost+found",
      "default-data-pvc-1",
      "--20261127T181500Z--keep",                        // no directory part
      "d--20261127T181500Z",                             // no expiry
      "d--20261127T181500Z--until-",                     // no expiry time
      "d--20261327T181500Z--keep",                       // month 13
      "d--20261131T181500Z--keep",                       // 31 November
      "d--2026-11-27T18:15Z--keep",                      // another format
      "d--20261127T181500Z--until-20261127T181500",      // no Z
      "d--20261127T181500Z--keep--1",                    // counters start at 2
      "d--20261127T181500Z--keep--02",                   // and have no leading 0
      "d--20261127T181500Z--keep--12345",                // at most four digits
      "d--20261127T181500Z--later",
  };
  for (const char* name : bad) {
    INFO(name);
    CHECK_FALSE(ParseArchiveName(name));
  }
}

TEST_CASE("an archive's name fits in 255 bytes, the directory part cut, the times kept", "[archive]") {
  const std::string long_dir = "ns/" + std::string(252, 'a');  // a pathPattern's longest part
  for (int counter : {1, 2, 9999, 123456}) {
    const std::string name = ArchiveName(long_dir, kNov27, 3600, counter);
    INFO(name);
    CHECK(name.size() <= kArchiveNameMax);
    std::optional<ArchiveNameParts> parts = ParseArchiveName(name);
    REQUIRE(parts);
    CHECK(parts->expires_at == kNov27 + 3600);
    CHECK(name.rfind(ArchivePrefix(long_dir), 0) == 0);
    CHECK(parts->dir + "--" == ArchivePrefix(long_dir));
    CHECK(ArchiveOf(name, long_dir));
  }
}

TEST_CASE("a cut directory part ends in a hash of the whole name: no volume's archives pass for another's", "[archive]") {
  const std::string common = "ns/" + std::string(230, 'a');
  struct Row {
    const char* name;
    std::string dir;
  } rows[] = {
      {"short", "ns/db"},
      {"short, its name then \"--\"", "ns/db--x"},
      {"200 bytes: not cut", std::string(200, 'b')},
      {"201 bytes: cut", std::string(201, 'b')},
      {"long", common},
      {"long, one more byte", common + "b"},
      {"long, another byte", common + "c"},
      {"long, and \"--\" after", common + "--x"},
      {"longest", "ns/" + std::string(252, 'a')},
  };
  for (const Row& r : rows) {
    INFO(r.name);
    const std::string part = ArchiveDirPart(r.dir);
    CHECK(part.size() <= 200);
    CHECK(part.size() == std::min<size_t>(r.dir.size(), 200));
    CHECK(ArchivePrefix(r.dir) == part + "--");
    CHECK((part.find('~') != std::string::npos) == (r.dir.size() > 200));
    for (int64_t keep : {int64_t{0}, int64_t{3600}}) {
      const std::string name = ArchiveName(r.dir, kNov27, keep, 7);
      CHECK(name.size() <= kArchiveNameMax);
      REQUIRE(ParseArchiveName(name));
      CHECK(ParseArchiveName(name)->dir == part);
      for (const Row& other : rows) {
        INFO("the archive of " << other.name);
        CHECK(ArchiveOf(name, other.dir) == (other.dir == r.dir));
        if (other.dir != r.dir && other.dir.size() > 200 && r.dir.size() > 200) {
          CHECK(name.rfind(ArchivePrefix(other.dir), 0) != 0);  // cut ones: not even their start
        }
      }
    }
  }
  // The same name cuts the same way every time: a later attempt finds the earlier's archive.
  CHECK(ArchiveDirPart(common + "b") == ArchiveDirPart(common + "b"));
  CHECK(ArchiveDirPart(common + "b").substr(0, 183) == ("ns_" + std::string(230, 'a')).substr(0, 183));
  CHECK_FALSE(ArchiveOf("lost+found", "ns/db"));
}

TEST_CASE("an archive expires once its time has come, never when kept for ever", "[archive]") {
  ArchiveNameParts week = *ParseArchiveName(ArchiveName(kDir, kNov27, 7 * 24 * 3600));
  CHECK_FALSE(ArchiveExpired(week, kNov27));
  CHECK_FALSE(ArchiveExpired(week, kNov27 + 7 * 24 * 3600 - 1));
  CHECK(ArchiveExpired(week, kNov27 + 7 * 24 * 3600));
  ArchiveNameParts ever = *ParseArchiveName(ArchiveName(kDir, kNov27, 0));
  CHECK_FALSE(ArchiveExpired(ever, kNov27 + 100LL * 366 * 24 * 3600));
}

TEST_CASE("an archive goes once its time has come and it has been watched as long as it is kept", "[archive]") {
  constexpr int64_t kWeek = 7 * 24 * 3600;
  const ArchiveNameParts week = *ParseArchiveName(ArchiveName(kDir, kNov27, kWeek));
  const ArchiveNameParts ever = *ParseArchiveName(ArchiveName(kDir, kNov27, 0));
  struct Row {
    const char* name;
    const ArchiveNameParts& parts;
    int64_t now, watched;
    bool due;
  } rows[] = {
      {"watched all the week, its time come", week, kNov27 + kWeek, kWeek, true},
      {"watched longer, long after", week, kNov27 + 10 * kWeek, 10 * kWeek, true},
      {"its time not come", week, kNov27 + kWeek - 1, kWeek, false},
      // Archived while the clock was 30 days behind: once corrected, the name's time has long
      // passed; this process has seen it for a minute.
      {"a name from a clock behind", week, kNov27 + 30 * 86400, 60, false},
      {"... watched a second short of the week", week, kNov27 + 30 * 86400, kWeek - 1, false},
      {"... watched the week", week, kNov27 + 30 * 86400, kWeek, true},
      {"a restart: watched from zero again", week, kNov27 + 2 * kWeek, 0, false},
      {"kept for ever", ever, kNov27 + 100LL * 366 * 86400, 100LL * 366 * 86400, false},
  };
  for (const Row& r : rows) {
    INFO(r.name);
    CHECK(ArchiveDue(r.parts, r.now, r.watched) == r.due);
  }
}

TEST_CASE("onDelete and archiveFor: bad values are refused, saying what is allowed", "[archive][reconcile]") {
  struct Row {
    const char* name;
    std::map<std::string, std::string> params;
    const char* says;
  } rows[] = {
      {"onDelete unknown", {{"onDelete", "trash"}}, "parameter onDelete=\"trash\" must be \"delete\", \"archive\" or \"retain\""},
      {"archiveFor without archive", {{"archiveFor", "168h"}}, "parameter archiveFor=\"168h\" only goes with onDelete: \"archive\""},
      {"archiveFor with retain", {{"onDelete", "retain"}, {"archiveFor", "1h"}}, "only goes with onDelete: \"archive\""},
      {"archiveFor days", {{"onDelete", "archive"}, {"archiveFor", "7d"}}, "parameter archiveFor: \"7d\" is not a duration"},
      {"archiveFor negative", {{"onDelete", "archive"}, {"archiveFor", "-1h"}}, "\"-1h\" is not a duration"},
      {"archiveFor fraction", {{"onDelete", "archive"}, {"archiveFor", "1.5h"}}, "\"1.5h\" is not a duration"},
  };
  for (const Row& r : rows) {
    INFO(r.name);
    StorageClass sc = OurClass("Immediate", r.params);
    Action a = DecideClaim(TestConfig(), OurClaim(), &sc, nullptr);
    REQUIRE(a.kind == Action::kFail);
    CHECK_THAT(a.message, Catch::Contains(r.says));
  }
}

TEST_CASE("the PV carries onDelete and archiveFor, and its deletion reads them back", "[archive][reconcile]") {
  struct Row {
    std::map<std::string, std::string> params;
    const char* on_delete;
    const char* archive_for;
  } rows[] = {{{}, "delete", ""},
              {{{"onDelete", "delete"}}, "delete", ""},
              {{{"onDelete", "retain"}}, "retain", ""},
              {{{"onDelete", "archive"}}, "archive", "0"},
              {{{"onDelete", "archive"}, {"archiveFor", "1h30m"}}, "archive", "1h30m"}};
  for (const Row& r : rows) {
    INFO(r.on_delete << " " << r.archive_for);
    StorageClass sc = OurClass("Immediate", r.params);
    Action made = DecideClaim(TestConfig(), OurClaim(), &sc, nullptr);
    REQUIRE(made.kind == Action::kProvision);
    Volume v = made.volume;
    v.meta.uid = "pv-uid";
    v.phase = "Released";
    Action a = DecideVolume(TestConfig(), v);  // the class is not needed: it may be gone
    REQUIRE(a.kind == Action::kDelete);
    CHECK(a.on_delete == r.on_delete);
    CHECK(a.archive_for == r.archive_for);
    v.reclaim_policy = "Retain";  // reclaim policy Retain: nothing is done, whatever onDelete says
    CHECK(DecideVolume(TestConfig(), v).kind == Action::kNothing);
  }
}

TEST_CASE("a directory moved into .archive gets a name no other archive has", "[archive][fs]") {
  harness::TempDir tmp;
  Result<Root> root = Root::Open(tmp.path());
  REQUIRE(root.ok());
  Result<Root> archive = OpenArchiveFolder(*root, true);
  REQUIRE(archive.ok());
  struct stat st;
  REQUIRE(stat((tmp.path() + "/.archive").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  const auto name_for = [](int counter) { return ArchiveName(kDir, kNov27, 0, counter); };
  for (int i = 0; i < 3; ++i) {
    REQUIRE(root->MakeDir(kDir, 0777).ok());
    harness::WriteFile(tmp.path() + "/" + kDir + "/file", std::to_string(i));
    Result<std::string> moved = MoveIntoArchive(*root, kDir, *archive, name_for);
    REQUIRE(moved.ok());
    CHECK(*moved == name_for(i + 1));
    CHECK(harness::ReadFile(tmp.path() + "/.archive/" + *moved + "/file") == std::to_string(i));
  }
  CHECK(ArchivesStartingWith(*archive, ArchivePrefix(kDir)).size() == 3);
  Result<std::string> gone = MoveIntoArchive(*root, kDir, *archive, name_for);
  CHECK(gone.status().code() == Status::kNotFound);
  REQUIRE(symlink("/etc", (tmp.path() + "/" + kDir).c_str()) == 0);
  Result<std::string> link = MoveIntoArchive(*root, kDir, *archive, name_for);
  CHECK(link.status().code() == Status::kConflict);
  CHECK(harness::Exists(tmp.path() + "/" + kDir));
}

TEST_CASE("an .archive that is a symlink or a file is refused, and nothing is made through it", "[archive][fs]") {
  harness::TempDir tmp, elsewhere;
  Result<Root> root = Root::Open(tmp.path());
  REQUIRE(root.ok());
  REQUIRE(symlink(elsewhere.path().c_str(), (tmp.path() + "/.archive").c_str()) == 0);
  Result<Root> linked = OpenArchiveFolder(*root, true);
  CHECK(linked.status().code() == Status::kConflict);
  CHECK_THAT(linked.status().message(), Catch::Contains(".archive is not a directory"));
  CHECK(harness::ListDir(elsewhere.path()).empty());
  REQUIRE(unlink((tmp.path() + "/.archive").c_str()) == 0);
  harness::WriteFile(tmp.path() + "/.archive", "x");
  CHECK(OpenArchiveFolder(*root, true).status().code() == Status::kConflict);
  CHECK(OpenArchiveFolder(*root, false).status().code() == Status::kConflict);
  REQUIRE(unlink((tmp.path() + "/.archive").c_str()) == 0);
  CHECK(OpenArchiveFolder(*root, false).status().code() == Status::kNotFound);
}

TEST_CASE("an .archive found there is used only if it is root's, and closed to 0700 if others may look in", "[archive][fs]") {
  struct Row {
    const char* name;
    uid_t uid;
    mode_t mode;
    bool used;
    mode_t after;
  } rows[] = {{"root's, 0700", 0, 0700, true, 0700},
              {"root's, 0755 (an admin's copy)", 0, 0755, true, 0700},
              {"root's, 1777", 0, 01777, true, 01700},
              {"a tenant's, 0700", 1000, 0700, false, 0700},
              {"a tenant's, 0777", 1000, 0777, false, 0777}};
  for (const Row& r : rows) {
    INFO(r.name);
    harness::TempDir tmp;
    Result<Root> root = Root::Open(tmp.path());
    REQUIRE(root.ok());
    const std::string folder = tmp.path() + "/.archive";
    REQUIRE(mkdir(folder.c_str(), 0700) == 0);
    REQUIRE(chmod(folder.c_str(), r.mode) == 0);
    REQUIRE(chown(folder.c_str(), r.uid, r.uid) == 0);
    for (bool create : {false, true}) {
      Result<Root> archive = OpenArchiveFolder(*root, create);
      CHECK(archive.ok() == r.used);
      if (!r.used) {
        CHECK(archive.status().code() == Status::kConflict);
        CHECK_THAT(archive.status().message(), Catch::Contains(folder + " is owned by uid 1000, not root"));
        CHECK_THAT(archive.status().message(), Catch::Contains("chown root:root " + folder + " && chmod 0700 " + folder));
      }
      struct stat st {};
      REQUIRE(stat(folder.c_str(), &st) == 0);
      CHECK((st.st_mode & 07777) == r.after);
      CHECK(st.st_uid == r.uid);
    }
  }
}
