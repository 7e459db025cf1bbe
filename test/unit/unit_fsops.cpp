// Tests fsops.hpp against the real filesystem. Runs as root (mounts, chattr, chown); each test
// works in its own mkdtemp folder: <tmp>/root is the Root, <tmp>/outside holds sentinels that
// must survive. Mount and immutable-file tests WARN and skip when the sandbox refuses them.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <grp.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "fs/fsops.hpp"

// Bytes the program holds through operator new now, and the most it held since the last
// ResetPeak (for the bound on what a failed removal keeps in memory).
namespace heap {
std::atomic<long> now{0}, peak{0};
inline void ResetPeak() { peak = now.load(); }
}  // namespace heap
void* operator new(size_t n) {
  void* p = std::malloc(n + 16);
  if (p == nullptr) throw std::bad_alloc();
  *static_cast<size_t*>(p) = n;
  long cur = heap::now += static_cast<long>(n);
  for (long pk = heap::peak; cur > pk && !heap::peak.compare_exchange_weak(pk, cur);) {
  }
  return static_cast<char*>(p) + 16;
}
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  char* base = static_cast<char*>(p) - 16;
  heap::now -= static_cast<long>(*reinterpret_cast<size_t*>(base));
  std::free(base);
}
void operator delete(void* p, size_t) noexcept { operator delete(p); }
// Every other form goes through the two above, so that no block is freed by another allocator
// (AddressSanitizer replaces the forms a program does not).
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  try {
    return operator new(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete[](void* p) noexcept { operator delete(p); }
void operator delete[](void* p, size_t) noexcept { operator delete(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { operator delete(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { operator delete(p); }

namespace {

// --- helpers (plain path-based POSIX; they are not under test) ---------------------------

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

bool IsDir(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

struct stat Lstat(const std::string& path) {
  struct stat st;
  memset(&st, 0, sizeof st);
  REQUIRE(lstat(path.c_str(), &st) == 0);
  return st;
}

void WriteFile(const std::string& path, const std::string& content) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()));
  close(fd);
}

std::string ReadFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "<missing>";
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

void MkDir(const std::string& path, mode_t mode = 0755) {
  REQUIRE(mkdir(path.c_str(), mode) == 0);
  REQUIRE(chmod(path.c_str(), mode) == 0);
}

void Symlink(const std::string& target, const std::string& path) { REQUIRE(symlink(target.c_str(), path.c_str()) == 0); }

// A folder of files (and a subfolder of files) whose survival proves nothing reached it.
void MakeSentinel(const std::string& dir) {
  MkDir(dir);
  MkDir(dir + "/sub");
  for (int i = 0; i < 5; ++i) {
    WriteFile(dir + "/f" + std::to_string(i), "sentinel " + std::to_string(i));
    WriteFile(dir + "/sub/g" + std::to_string(i), "deep sentinel " + std::to_string(i));
  }
}

// Counts sentinel files still present with their content (10 when intact).
int SentinelFiles(const std::string& dir) {
  int n = 0;
  for (int i = 0; i < 5; ++i) {
    n += ReadFile(dir + "/f" + std::to_string(i)) == "sentinel " + std::to_string(i);
    n += ReadFile(dir + "/sub/g" + std::to_string(i)) == "deep sentinel " + std::to_string(i);
  }
  return n;
}

// Sets or clears the immutable flag (chattr +i). Returns 0 or an errno value.
int SetImmutable(const std::string& path, bool on) {
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno;
  int flags = 0;
  int err = 0;
  if (ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0) {
    err = errno;
  } else {
    flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
    if (ioctl(fd, FS_IOC_SETFLAGS, &flags) != 0) err = errno;
  }
  close(fd);
  return err;
}

// A fresh folder /tmp/fsops-XXXXXX with root/ (opened as a Root) and outside/. Removed at
// the end with RemoveTree from /tmp; mounts registered with AddMount are detached first.
class Sandbox {
 public:
  Sandbox() {
    char tmpl[] = "/tmp/fsops-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    MkDir(root_path());
    MkDir(outside());
    Result<Root> root = Root::Open(root_path());
    REQUIRE(root.ok());
    root_ = std::move(*root);
  }
  ~Sandbox() {
    for (auto it = mounts_.rbegin(); it != mounts_.rend(); ++it) umount2(it->c_str(), MNT_DETACH);
    Result<Root> tmp = Root::Open("/tmp");
    Status st = tmp.ok() ? tmp->RemoveTree(dir_.substr(5)) : tmp.status();
    if (!st.ok()) std::cerr << "WARN: cleanup of " << dir_ << " failed: " << st.message() << "\n";
  }
  const Root& root() const { return root_; }
  std::string root_path() const { return dir_ + "/root"; }
  std::string outside() const { return dir_ + "/outside"; }
  std::string in_root(const std::string& rel) const { return root_path() + "/" + rel; }
  const std::string& dir() const { return dir_; }

  // Mounts (mount(2)); returns false and WARNs when the sandbox refuses.
  bool Mount(const std::string& source, const std::string& target, const char* type, unsigned long flags) {
    if (mount(source.c_str(), target.c_str(), type, flags, nullptr) != 0) {
      WARN("SKIPPED: mount " << source << " on " << target << " refused: " << strerror(errno));
      return false;
    }
    mounts_.push_back(target);
    return true;
  }
  void Unmount(const std::string& target) {
    REQUIRE(umount2(target.c_str(), MNT_DETACH) == 0);
    mounts_.erase(std::find(mounts_.begin(), mounts_.end(), target));
  }

 private:
  std::string dir_;
  Root root_;
  std::vector<std::string> mounts_;
};

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

// --- names and paths ---------------------------------------------------------------------

TEST_CASE("ValidName accepts single names and rejects everything else", "[fsops][name]") {
  struct Row {
    const char* what;
    std::string name;
    bool valid;
  };
  const Row rows[] = {
      {"plain", "default-claim-pvc-1", true},
      {"dots inside", "a..b", true},
      {"leading dot", ".hidden", true},
      {"utf-8", "caf\xc3\xa9", true},
      {"255 bytes", std::string(255, 'a'), true},
      {"empty", "", false},
      {"dot", ".", false},
      {"dot dot", "..", false},
      {"slash", "a/b", false},
      {"leading slash", "/a", false},
      {"trailing slash", "a/", false},
      {"256 bytes", std::string(256, 'a'), false},
      {"NUL", std::string("a\0b", 3), false},
      {"newline", "a\nb", false},
      {"tab", "a\tb", false},
      {"DEL", "a\x7f", false},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    CHECK(Root::ValidName(row.name) == row.valid);
  }
}

TEST_CASE("Printable makes paths safe for one log line", "[fsops][name]") {
  struct Row {
    const char* what;
    std::string in, out;
  };
  const std::string long_path = std::string(300, 'a') + std::string(300, 'b');
  const Row rows[] = {
      {"plain", "a/b", "a/b"},
      {"newline and escape", "a\nb\x1b[31m", "a?b?[31m"},
      {"DEL", "a\x7f", "a?"},
      {"utf-8 kept", "caf\xc3\xa9", "caf\xc3\xa9"},
      {"long: head and tail", long_path, std::string(200, 'a') + "..." + std::string(200, 'b')},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    CHECK(fsops_detail::Printable(row.in) == row.out);
  }
}

TEST_CASE("Root::Open accepts a normalised directory and refuses the rest", "[fsops][open]") {
  Sandbox box;
  WriteFile(box.outside() + "/file", "x");
  Symlink(box.root_path(), box.outside() + "/link");
  struct Row {
    const char* what;
    std::string path;
    Status::Code code;
    std::string message_part;
  };
  const Row rows[] = {
      {"good", box.root_path(), Status::kOk, ""},
      {"relative", box.root_path().substr(1), Status::kInvalid, "absolute, normalised"},
      {"trailing slash", box.root_path() + "/", Status::kInvalid, "normalised"},
      {"double slash", box.dir() + "//root", Status::kInvalid, "normalised"},
      {"dot dot", box.outside() + "/../root", Status::kInvalid, "normalised"},
      {"slash", "/", Status::kInvalid, "must not be \"/\""},
      {"empty", "", Status::kInvalid, "absolute"},
      {"symlink", box.outside() + "/link", Status::kInvalid, "is a symlink (to " + box.root_path()},
      {"file", box.outside() + "/file", Status::kInvalid, "not a directory"},
      {"missing", box.outside() + "/missing", Status::kNotFound, "No such file"},
  };
  for (const Row& row : rows) {
    INFO(row.what << ": " << row.path);
    Result<Root> got = Root::Open(row.path);
    CHECK(got.status().code() == row.code);
    CHECK(Contains(got.status().message(), row.message_part));
    if (got.ok()) {
      CHECK(got->fd() >= 0);
      CHECK(got->path() == row.path);
    }
  }
}

TEST_CASE("Root is movable and closes its descriptor once", "[fsops][open]") {
  Sandbox box;
  Result<Root> opened = Root::Open(box.root_path());
  REQUIRE(opened.ok());
  Root a = std::move(*opened);
  int fd = a.fd();
  REQUIRE(fcntl(fd, F_GETFD) >= 0);
  REQUIRE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
  Root b = std::move(a);
  CHECK(a.fd() == -1);
  CHECK(b.fd() == fd);
  { Root c = std::move(b); }
  CHECK(fcntl(fd, F_GETFD) == -1);
}

// --- MakeDir ------------------------------------------------------------------------------

TEST_CASE("MakeDir sets the mode exactly whatever the umask", "[fsops][mkdir]") {
  Sandbox box;
  const unsigned modes[] = {0777, 0755, 0700, 0000, 02775, 01777};
  const mode_t masks[] = {0, 022, 077, 0777};
  int n = 0;
  for (mode_t mask : masks) {
    for (unsigned mode : modes) {
      std::string name = "d" + std::to_string(n++);
      mode_t old = umask(mask);
      Status st = box.root().MakeDir(name, mode);
      umask(old);
      INFO("umask " << std::oct << mask << " mode " << mode);
      REQUIRE(st.ok());
      struct stat s = Lstat(box.in_root(name));
      CHECK(S_ISDIR(s.st_mode));
      CHECK((s.st_mode & 07777) == mode);
    }
  }
}

TEST_CASE("MakeDir sets the owner and is idempotent on an existing directory", "[fsops][mkdir]") {
  Sandbox box;
  REQUIRE(box.root().MakeDir("v", 0750, 1234, 5678).ok());
  struct stat s = Lstat(box.in_root("v"));
  CHECK(s.st_uid == 1234u);
  CHECK(s.st_gid == 5678u);
  CHECK((s.st_mode & 07777) == 0750);
  WriteFile(box.in_root("v/data"), "kept");

  SECTION("again with another mode and owner: both updated, content kept") {
    REQUIRE(box.root().MakeDir("v", 0777, 42, -1).ok());
    s = Lstat(box.in_root("v"));
    CHECK(s.st_uid == 42u);
    CHECK(s.st_gid == 5678u);
    CHECK((s.st_mode & 07777) == 0777);
    CHECK(ReadFile(box.in_root("v/data")) == "kept");
  }
  SECTION("-1/-1 leaves the owner alone") {
    REQUIRE(box.root().MakeDir("v", 0700).ok());
    s = Lstat(box.in_root("v"));
    CHECK(s.st_uid == 1234u);
    CHECK(s.st_gid == 5678u);
  }
}

TEST_CASE("MakeDir refuses a file at the name and leaves it intact", "[fsops][mkdir]") {
  Sandbox box;
  WriteFile(box.in_root("f"), "precious");
  REQUIRE(chmod(box.in_root("f").c_str(), 0600) == 0);
  Status st = box.root().MakeDir("f", 0777, 1, 1);
  CHECK(st.code() == Status::kConflict);
  CHECK(Contains(st.message(), "not a directory"));
  CHECK(ReadFile(box.in_root("f")) == "precious");
  struct stat s = Lstat(box.in_root("f"));
  CHECK((s.st_mode & 07777) == 0600);
  CHECK(s.st_uid == 0u);
}

TEST_CASE("MakeDir refuses a symlink planted at the name and leaves its target alone", "[fsops][mkdir]") {
  Sandbox box;
  const std::string target = box.outside() + "/target";
  MakeSentinel(target);
  const struct stat slash_before = Lstat("/");
  struct Row {
    const char* what;
    std::string link_to;
  };
  const Row rows[] = {
      {"to a directory", target},
      {"dangling, into a missing dir", box.outside() + "/not-there"},
      {"to /", "/"},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    std::string name = "link";
    Symlink(row.link_to, box.in_root(name));
    Status st = box.root().MakeDir(name, 0777, 4242, 4242);
    CHECK(st.code() == Status::kConflict);
    CHECK(S_ISLNK(Lstat(box.in_root(name)).st_mode));
    REQUIRE(unlink(box.in_root(name).c_str()) == 0);
  }
  struct stat s = Lstat(target);
  CHECK((s.st_mode & 07777) == 0755);
  CHECK(s.st_uid == 0u);
  CHECK(SentinelFiles(target) == 10);
  CHECK_FALSE(Exists(box.outside() + "/not-there"));
  const struct stat slash_after = Lstat("/");
  CHECK(slash_after.st_mode == slash_before.st_mode);
  CHECK(slash_after.st_uid == slash_before.st_uid);
}

TEST_CASE("MakeDir rejects names that are not one plain name", "[fsops][mkdir]") {
  Sandbox box;
  const std::string bad[] = {"", ".", "..", "a/b", "../outside/x", "/tmp/x", std::string("a\0b", 3)};
  for (const std::string& name : bad) {
    INFO(name);
    CHECK(box.root().MakeDir(name, 0777).code() == Status::kInvalid);
  }
  CHECK(box.root().MakeDir("x", 010000).code() == Status::kInvalid);
  CHECK_FALSE(Exists(box.outside() + "/x"));
  CHECK_FALSE(Exists(box.in_root("x")));
}

// --- RemoveTree: basics and links ---------------------------------------------------------

TEST_CASE("RemoveTree removes a tree and is idempotent", "[fsops][rm]") {
  Sandbox box;
  REQUIRE(box.root().MakeDir("v", 0777).ok());
  MkDir(box.in_root("v/a"));
  MkDir(box.in_root("v/a/b"));
  MkDir(box.in_root("v/empty"));
  WriteFile(box.in_root("v/top"), "1");
  WriteFile(box.in_root("v/a/b/deep"), "2");
  REQUIRE(mkfifo(box.in_root("v/a/fifo").c_str(), 0600) == 0);
  REQUIRE(mknod(box.in_root("v/a/null").c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0);
  REQUIRE(box.root().MakeDir("neighbour", 0777).ok());

  Status st = box.root().RemoveTree("v");
  INFO(st.message());
  CHECK(st.ok());
  CHECK_FALSE(Exists(box.in_root("v")));
  CHECK(IsDir(box.in_root("neighbour")));
  CHECK(IsDir(box.root_path()));
  CHECK(box.root().RemoveTree("v").ok());          // gone already
  CHECK(box.root().RemoveTree("never-made").ok());  // never existed
}

TEST_CASE("RemoveTree stops when asked to, and a later call removes the rest", "[fsops][rm]") {
  Sandbox box;
  REQUIRE(box.root().MakeDir("v", 0777).ok());
  MkDir(box.in_root("v/a"));
  for (int i = 0; i < 100; ++i) WriteFile(box.in_root("v/a/f" + std::to_string(i)), "x");
  std::atomic<bool> cancel{true};
  Status st = box.root().RemoveTree("v", &cancel);
  CHECK(st.code() == Status::kCanceled);
  CHECK_THAT(st.message(), Catch::Contains("stopped before the end"));
  CHECK(Exists(box.in_root("v/a/f0")));  // cut short: nothing of the tree below was removed
  cancel = false;
  CHECK(box.root().RemoveTree("v", &cancel).ok());
  CHECK_FALSE(Exists(box.in_root("v")));
}

TEST_CASE("RemoveTree refuses names that could reach the root or beyond", "[fsops][rm]") {
  Sandbox box;
  WriteFile(box.in_root("keep"), "k");
  MakeSentinel(box.outside() + "/s");
  const std::string bad[] = {"", ".", "..", "../outside", "/", "a/b", box.outside()};
  for (const std::string& name : bad) {
    INFO(name);
    CHECK(box.root().RemoveTree(name).code() == Status::kInvalid);
  }
  CHECK(ReadFile(box.in_root("keep")) == "k");
  CHECK(SentinelFiles(box.outside() + "/s") == 10);
}

TEST_CASE("RemoveTree removes symlinks and hard links as links, never their targets", "[fsops][rm]") {
  Sandbox box;
  const std::string sentinel = box.outside() + "/sentinel";
  MakeSentinel(sentinel);
  REQUIRE(box.root().MakeDir("v", 0777).ok());
  MkDir(box.in_root("v/sub"));
  Symlink(sentinel, box.in_root("v/to-dir"));
  Symlink(sentinel + "/f0", box.in_root("v/to-file"));
  Symlink(sentinel, box.in_root("v/sub/to-dir"));
  Symlink("../../../outside/sentinel", box.in_root("v/sub/relative"));
  Symlink("/", box.in_root("v/to-slash"));
  Symlink("/etc", box.in_root("v/sub/to-etc"));
  Symlink("dangling", box.in_root("v/dangling"));
  REQUIRE(link((sentinel + "/f1").c_str(), box.in_root("v/hard-link").c_str()) == 0);
  // Files of the real / that must survive the link to "/".
  std::vector<std::string> system_files;
  for (const char* path : {"/etc/hostname", "/etc/passwd", "/etc/hosts", "/bin/sh"}) {
    if (Exists(path)) system_files.push_back(path);
  }
  REQUIRE_FALSE(system_files.empty());

  Status st = box.root().RemoveTree("v");
  INFO(st.message());
  CHECK(st.ok());
  CHECK_FALSE(Exists(box.in_root("v")));
  CHECK(SentinelFiles(sentinel) == 10);
  CHECK(Lstat(sentinel + "/f1").st_nlink == 1);
  for (const std::string& path : system_files) {
    INFO(path);
    CHECK(Exists(path));
  }
}

TEST_CASE("RemoveTree on a symlink or file at the name removes only that link", "[fsops][rm]") {
  Sandbox box;
  const std::string sentinel = box.outside() + "/sentinel";
  MakeSentinel(sentinel);
  Symlink(sentinel, box.in_root("v-link"));
  Symlink("/", box.in_root("v-slash"));
  WriteFile(box.in_root("v-file"), "x");
  for (const char* name : {"v-link", "v-slash", "v-file"}) {
    INFO(name);
    Status st = box.root().RemoveTree(name);
    CHECK(st.ok());
    CHECK_FALSE(Exists(box.in_root(name)));
  }
  CHECK(SentinelFiles(sentinel) == 10);
  CHECK(Exists("/etc"));
}

// --- RemoveTree: depth, modes, mounts, immutable files ------------------------------------

// Makes `depth` directories nested as root/<name>/d/d/d... with a file at the bottom.
void MakeNested(const Root& root, const std::string& name, int depth) {
  REQUIRE(root.MakeDir(name, 0755).ok());
  int fd = openat(root.fd(), name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  for (int i = 1; i < depth; ++i) {
    REQUIRE(mkdirat(fd, "d", 0755) == 0);
    int next = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(next >= 0);
    close(fd);
    fd = next;
  }
  int file = openat(fd, "bottom", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  REQUIRE(file >= 0);
  close(file);
  close(fd);
}

TEST_CASE("RemoveTree removes 100000 nested directories with few descriptors", "[fsops][rm][deep]") {
  // On a tmpfs when mounting is allowed: on this VM's ext4 any removal of such a chain (rm -rf
  // too) spends minutes waiting on the journal, which says nothing about the walk.
  Sandbox box;
  const char* where = "tmpfs";
  if (mount("none", box.root_path().c_str(), "tmpfs", 0, nullptr) != 0) {
    where = "the disk of /tmp (tmpfs refused)";
  }
  struct Unmounter {
    std::string path;
    bool mounted;
    ~Unmounter() {
      if (mounted) umount2(path.c_str(), MNT_DETACH);
    }
  } unmounter{box.root_path(), std::string(where) == "tmpfs"};
  Result<Root> root = Root::Open(box.root_path());
  REQUIRE(root.ok());
  const int depth = 100000;
  rlimit old_limit;
  REQUIRE(getrlimit(RLIMIT_NOFILE, &old_limit) == 0);
  auto t0 = std::chrono::steady_clock::now();
  MakeNested(*root, "v", depth);
  // Few descriptors: the removal must work with room for only 64 more open files.
  int lowest_free = dup(0);
  REQUIRE(lowest_free >= 0);
  close(lowest_free);
  rlimit tight = old_limit;
  tight.rlim_cur = static_cast<rlim_t>(lowest_free + 64);
  REQUIRE(setrlimit(RLIMIT_NOFILE, &tight) == 0);
  auto t1 = std::chrono::steady_clock::now();
  Status st = root->RemoveTree("v");
  auto t2 = std::chrono::steady_clock::now();
  REQUIRE(setrlimit(RLIMIT_NOFILE, &old_limit) == 0);
  auto ms = [](auto a, auto b) { return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count(); };
  std::cout << "[fsops] " << depth << " nested directories on " << where << ": created in " << ms(t0, t1)
            << " ms, removed in " << ms(t1, t2) << " ms\n";
  INFO(st.message());
  CHECK(st.ok());
  CHECK_FALSE(Exists(box.in_root("v")));
  CHECK(root->ListDirs()->empty());
}

TEST_CASE("RemoveTree handles deep trees at any limit of open directories", "[fsops][rm][deep]") {
  // Small limits force the move-up scheme on every few levels, with siblings and files.
  for (int limit : {2, 3, 5}) {
    Sandbox box;
    INFO("max_open_dirs " << limit);
    MakeNested(box.root(), "v", 40);
    std::string path = box.in_root("v");
    for (int i = 0; i < 12; ++i, path += "/d") {
      MkDir(path + "/side");
      WriteFile(path + "/side/file", "x");
      WriteFile(path + "/file", "y");
    }
    Status st = box.root().RemoveTree("v", limit);
    INFO(st.message());
    CHECK(st.ok());
    CHECK_FALSE(Exists(box.in_root("v")));
  }
}

TEST_CASE("RemoveTree removes mode-000 directories and read-only files", "[fsops][rm]") {
  Sandbox box;
  REQUIRE(box.root().MakeDir("v", 0777).ok());
  MkDir(box.in_root("v/a"));
  MkDir(box.in_root("v/a/b"));
  WriteFile(box.in_root("v/a/b/ro"), "r");
  WriteFile(box.in_root("v/a/ro"), "r");
  MkDir(box.in_root("v/r"));
  WriteFile(box.in_root("v/r/ro"), "r");
  REQUIRE(chmod(box.in_root("v/a/b/ro").c_str(), 0444) == 0);
  REQUIRE(chmod(box.in_root("v/a/ro").c_str(), 0) == 0);
  REQUIRE(chmod(box.in_root("v/r/ro").c_str(), 0444) == 0);
  REQUIRE(chmod(box.in_root("v/a/b").c_str(), 0) == 0);
  REQUIRE(chmod(box.in_root("v/a").c_str(), 0) == 0);
  REQUIRE(chmod(box.in_root("v/r").c_str(), 0555) == 0);
  REQUIRE(chmod(box.in_root("v").c_str(), 0) == 0);
  Status st = box.root().RemoveTree("v");
  INFO(st.message());
  CHECK(st.ok());
  CHECK_FALSE(Exists(box.in_root("v")));
}

TEST_CASE("RemoveTree removes mode-000 directories when not root", "[fsops][rm][nonroot]") {
  Sandbox box;
  const uid_t nobody = 65534;
  REQUIRE(chmod(box.dir().c_str(), 0755) == 0);
  REQUIRE(chown(box.root_path().c_str(), nobody, nobody) == 0);
  REQUIRE(box.root().MakeDir("v", 0777, nobody, nobody).ok());
  const char* dirs[] = {"v/a", "v/a/b", "v/r"};
  const char* files[] = {"v/a/b/ro", "v/a/ro", "v/r/ro", "v/plain"};
  for (const char* d : dirs) MkDir(box.in_root(d));
  for (const char* f : files) WriteFile(box.in_root(f), "r");
  for (const char* f : files) REQUIRE(chown(box.in_root(f).c_str(), nobody, nobody) == 0);
  for (const char* d : dirs) REQUIRE(chown(box.in_root(d).c_str(), nobody, nobody) == 0);
  for (const char* f : files) REQUIRE(chmod(box.in_root(f).c_str(), 0444) == 0);
  REQUIRE(chmod(box.in_root("v/a/b").c_str(), 0) == 0);
  REQUIRE(chmod(box.in_root("v/a").c_str(), 0) == 0);
  REQUIRE(chmod(box.in_root("v/r").c_str(), 0555) == 0);
  REQUIRE(chmod(box.in_root("v").c_str(), 0500) == 0);

  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // child: become nobody, open the root, remove; report through the pipe
    close(pipe_fds[0]);
    if (setgroups(0, nullptr) != 0 || setresgid(nobody, nobody, nobody) != 0 ||
        setresuid(nobody, nobody, nobody) != 0) {
      _exit(3);
    }
    Result<Root> root = Root::Open(box.root_path());
    Status st = root.ok() ? root->RemoveTree("v") : root.status();
    std::string msg = st.ok() ? "ok" : st.message();
    ssize_t ignored = write(pipe_fds[1], msg.data(), msg.size());
    (void)ignored;
    _exit(st.ok() ? 0 : 1);
  }
  close(pipe_fds[1]);
  std::string msg;
  char buf[512];
  ssize_t n;
  while ((n = read(pipe_fds[0], buf, sizeof buf)) > 0) msg.append(buf, static_cast<size_t>(n));
  close(pipe_fds[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  INFO("child: " << msg);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_FALSE(Exists(box.in_root("v")));
}

TEST_CASE("RemoveTree leaves mounts inside a volume alone and reports them", "[fsops][rm][mount]") {
  for (int limit : {fsops_detail::kDefaultMaxOpenDirs, 2}) {
    Sandbox box;
    INFO("max_open_dirs " << limit);
    const std::string bind_source = box.outside() + "/bound";
    MakeSentinel(bind_source);
    REQUIRE(box.root().MakeDir("v", 0777).ok());
    MkDir(box.in_root("v/a"));
    MkDir(box.in_root("v/a/b"));
    MkDir(box.in_root("v/a/b/tmpfs"));
    MkDir(box.in_root("v/bind"));
    WriteFile(box.in_root("v/a/b/file"), "gone");
    WriteFile(box.in_root("v/other"), "gone");
    if (!box.Mount("none", box.in_root("v/a/b/tmpfs"), "tmpfs", 0)) return;
    WriteFile(box.in_root("v/a/b/tmpfs/data"), "on tmpfs");
    // Same filesystem as the volume: st_dev is equal, only the mount id tells.
    if (!box.Mount(bind_source, box.in_root("v/bind"), nullptr, MS_BIND)) return;

    Status st = box.root().RemoveTree("v", limit);
    INFO(st.message());
    CHECK_FALSE(st.ok());
    CHECK(Contains(st.message(), "could not remove 2 entries"));
    CHECK(Contains(st.message(), "a/b/tmpfs (mount point, left alone)"));
    CHECK(Contains(st.message(), "bind (mount point, left alone)"));
    CHECK(ReadFile(box.in_root("v/a/b/tmpfs/data")) == "on tmpfs");
    CHECK(SentinelFiles(bind_source) == 10);
    CHECK(SentinelFiles(box.in_root("v/bind")) == 10);
    CHECK_FALSE(Exists(box.in_root("v/a/b/file")));
    CHECK_FALSE(Exists(box.in_root("v/other")));

    // Once unmounted, a retry finishes the job; what was mounted is untouched.
    box.Unmount(box.in_root("v/a/b/tmpfs"));
    box.Unmount(box.in_root("v/bind"));
    st = box.root().RemoveTree("v", limit);
    CHECK(st.ok());
    CHECK_FALSE(Exists(box.in_root("v")));
    CHECK(SentinelFiles(bind_source) == 10);
  }
}

TEST_CASE("RemoveTree moves nothing while something is mounted below the volume", "[fsops][rm][mount]") {
  // Moving a directory up would move a mount below it too; with a mount present the walk goes
  // kExtraDepthOnMoveFailure levels past the limit instead and reports what lies deeper.
  Sandbox box;
  const int limit = 2;
  MakeNested(box.root(), "v", limit + fsops_detail::kExtraDepthOnMoveFailure + 10);
  MkDir(box.in_root("v/m nt"));  // mountinfo escapes the space as \040
  if (!box.Mount("none", box.in_root("v/m nt"), "tmpfs", 0)) return;
  WriteFile(box.in_root("v/m nt/data"), "on tmpfs");
  Status st = box.root().RemoveTree("v", limit);
  INFO(st.message());
  CHECK(Contains(st.message(), "could not remove 2 entries"));
  CHECK(Contains(st.message(), "m nt (mount point, left alone)"));
  CHECK(Contains(st.message(), "(too deep to remove while something is mounted below the volume)"));
  CHECK_FALSE(Contains(st.message(), "now at"));
  CHECK(ReadFile(box.in_root("v/m nt/data")) == "on tmpfs");
  Result<std::vector<std::string>> left = box.root().ListDirs();
  CHECK(*left == std::vector<std::string>{"v"});

  box.Unmount(box.in_root("v/m nt"));
  CHECK(box.root().RemoveTree("v", limit).ok());
  CHECK_FALSE(Exists(box.in_root("v")));
}

TEST_CASE("UnescapeMountPath decodes mountinfo's octal escapes", "[fsops][mount]") {
  struct Row {
    std::string in, out;
  };
  const Row rows[] = {
      {"/plain", "/plain"},         {"/a\\040b", "/a b"},  {"/tab\\011x", "/tab\tx"},
      {"/nl\\012", "/nl\n"},         {"/back\\134", "/back\\"}, {"/short\\04", "/short\\04"},
      {"/not\\999", "/not\\999"},
  };
  for (const Row& row : rows) {
    INFO(row.in);
    CHECK(fsops_detail::UnescapeMountPath(row.in) == row.out);
  }
}

TEST_CASE("RemoveTree leaves a volume directory that is itself a mount point alone", "[fsops][rm][mount]") {
  Sandbox box;
  REQUIRE(box.root().MakeDir("v", 0777).ok());
  if (!box.Mount("none", box.in_root("v"), "tmpfs", 0)) return;
  WriteFile(box.in_root("v/data"), "on tmpfs");
  Status st = box.root().RemoveTree("v");
  CHECK_FALSE(st.ok());
  CHECK(Contains(st.message(), "it is a mount point; left alone"));
  CHECK(ReadFile(box.in_root("v/data")) == "on tmpfs");
}

TEST_CASE("RemoveTree reports immutable files and removes everything else", "[fsops][rm][immutable]") {
  for (int limit : {fsops_detail::kDefaultMaxOpenDirs, 2}) {
    Sandbox box;
    INFO("max_open_dirs " << limit);
    REQUIRE(box.root().MakeDir("v", 0777).ok());
    MkDir(box.in_root("v/a"));
    MkDir(box.in_root("v/a/b"));
    MkDir(box.in_root("v/a/b/c"));
    WriteFile(box.in_root("v/a/b/c/stuck"), "immutable");
    WriteFile(box.in_root("v/a/b/c/loose"), "x");
    WriteFile(box.in_root("v/a/loose"), "x");
    MkDir(box.in_root("v/z"));
    WriteFile(box.in_root("v/z/loose"), "x");
    int err = SetImmutable(box.in_root("v/a/b/c/stuck"), true);
    if (err != 0) {
      WARN("SKIPPED: cannot set the immutable flag here: " << strerror(err));
      return;
    }
    Status st = box.root().RemoveTree("v", limit);
    INFO(st.message());
    CHECK_FALSE(st.ok());
    // Reported under its original path, and where it is now when a/b/c was moved up.
    CHECK(Contains(st.message(), "could not remove 1 entry: a/b/c/stuck (Operation not permitted"));
    std::string now = "a/b/c/stuck";
    const std::string marker = "; now at ";
    size_t at = st.message().find(marker);
    if (limit == 2) {
      REQUIRE(at != std::string::npos);
      now = st.message().substr(at + marker.size());
      now.pop_back();  // ")"
      CHECK(now.compare(0, 25, ".hostpath-provisioner-rm-") == 0);
    } else {
      CHECK(at == std::string::npos);
    }
    CHECK(ReadFile(box.in_root("v/" + now)) == "immutable");
    CHECK_FALSE(Exists(box.in_root("v/a/b/c/loose")));
    CHECK_FALSE(Exists(box.in_root("v/a/loose")));
    CHECK_FALSE(Exists(box.in_root("v/z")));

    REQUIRE(SetImmutable(box.in_root("v/" + now), false) == 0);
    CHECK(box.root().RemoveTree("v", limit).ok());
    CHECK_FALSE(Exists(box.in_root("v")));
  }
}

TEST_CASE("RemoveTree names the first few failures and counts the rest", "[fsops][rm][immutable]") {
  Sandbox box;
  REQUIRE(box.root().MakeDir("v", 0777).ok());
  std::vector<std::string> stuck;
  for (int i = 0; i < 8; ++i) {
    stuck.push_back(box.in_root("v/stuck" + std::to_string(i)));
    WriteFile(stuck.back(), "x");
    int err = SetImmutable(stuck.back(), true);
    if (err != 0) {
      WARN("SKIPPED: cannot set the immutable flag here: " << strerror(err));
      return;
    }
  }
  Status st = box.root().RemoveTree("v");
  INFO(st.message());
  CHECK(Contains(st.message(), "could not remove 8 entries: stuck"));
  CHECK(Contains(st.message(), ", and 3 more"));
  for (const std::string& path : stuck) REQUIRE(SetImmutable(path, false) == 0);
  CHECK(box.root().RemoveTree("v").ok());
}

TEST_CASE("a removal that fails on many entries keeps a bounded list of them", "[fsops][rm][immutable]") {
  Sandbox box;
  REQUIRE(box.root().MakeDir("v", 0777).ok());
  const int kFiles = 20000;
  std::vector<std::string> stuck;
  for (int i = 0; i < kFiles; ++i) {
    stuck.push_back(box.in_root("v/an-undeletable-file-with-a-long-name-" + std::to_string(i)));
    WriteFile(stuck.back(), "");
    if (int err = SetImmutable(stuck.back(), true); err != 0) {
      for (const std::string& path : stuck) SetImmutable(path, false);
      WARN("SKIPPED: cannot set the immutable flag here: " << strerror(err));
      return;
    }
  }
  heap::ResetPeak();
  const long before = heap::now;
  Status st = box.root().RemoveTree("v");
  const long peak = heap::peak - before;
  INFO("peak heap during the removal: " << peak << " bytes");
  CHECK(Contains(st.message(), "could not remove 20000 entries"));
  // 20000 names of ~45 bytes in a set take well over 2 MB; the remembered ones stay under 1000.
  CHECK(peak < 400 * 1000);
  for (const std::string& path : stuck) REQUIRE(SetImmutable(path, false) == 0);
  CHECK(box.root().RemoveTree("v").ok());
}

// --- RemoveTree: races --------------------------------------------------------------------

TEST_CASE("RemoveTree never descends through a directory swapped for a symlink", "[fsops][rm][toctou]") {
  // An attacker thread keeps exchanging (renameat2 RENAME_EXCHANGE, atomic) real directories
  // of the volume with symlinks to a sentinel outside the root, at two depths, while the tree
  // is removed. Whatever the interleaving, the sentinel's files must survive.
  Sandbox box;
  const std::string sentinel = box.outside() + "/sentinel";
  MakeSentinel(sentinel);
  const int rounds = 60;
  long exchanges = 0, removals_ok = 0;
  for (int round = 0; round < rounds; ++round) {
    const int limit = round % 2 ? 2 : fsops_detail::kDefaultMaxOpenDirs;
    REQUIRE(box.root().MakeDir("v", 0777).ok());
    const std::string pairs[][2] = {{box.in_root("v/d"), box.in_root("v/l")},
                                    {box.in_root("v/x/y/d"), box.in_root("v/x/y/l")}};
    MkDir(box.in_root("v/x"));
    MkDir(box.in_root("v/x/y"));
    for (const auto& pair : pairs) {
      MkDir(pair[0]);
      for (int i = 0; i < 30; ++i) WriteFile(pair[0] + "/f" + std::to_string(i), "x");
      MkDir(pair[0] + "/s");
      MkDir(pair[0] + "/s/t");
      WriteFile(pair[0] + "/s/t/f", "x");
      Symlink(sentinel, pair[1]);
    }
    std::atomic<bool> stop{false};
    std::atomic<long> swapped{0};
    std::thread attacker([&] {
      int budget = 20;  // symlinks re-planted after RemoveTree unlinked them
      while (!stop.load()) {
        for (const auto& pair : pairs) {
          if (renameat2(AT_FDCWD, pair[0].c_str(), AT_FDCWD, pair[1].c_str(), RENAME_EXCHANGE) == 0) {
            ++swapped;
          } else if (errno == ENOENT && budget > 0 && symlink(sentinel.c_str(), pair[1].c_str()) == 0) {
            --budget;
          }
        }
      }
    });
    Status st = box.root().RemoveTree("v", limit);
    stop = true;
    attacker.join();
    exchanges += swapped.load();
    removals_ok += st.ok();
    INFO("round " << round << ": " << st.message());
    REQUIRE(SentinelFiles(sentinel) == 10);
    Status again = box.root().RemoveTree("v");
    INFO(again.message());
    REQUIRE(again.ok());
    REQUIRE_FALSE(Exists(box.in_root("v")));
  }
  std::cout << "[fsops] swap race: " << rounds << " rounds, " << exchanges << " exchanges during removal, "
            << removals_ok << " removals finished in one call\n";
  CHECK(exchanges > 0);
  CHECK(SentinelFiles(sentinel) == 10);
}

TEST_CASE("RemoveTree survives the volume directory itself being swapped for a symlink", "[fsops][rm][toctou]") {
  // Only a process with access to the root could do this; it must still never reach the
  // sentinel, and the link must be removed as a link when it is found at the name.
  Sandbox box;
  const std::string sentinel = box.outside() + "/sentinel";
  MakeSentinel(sentinel);
  long exchanges = 0;
  for (int round = 0; round < 40; ++round) {
    REQUIRE(box.root().MakeDir("v", 0777).ok());
    for (int i = 0; i < 20; ++i) {
      MkDir(box.in_root("v/d" + std::to_string(i)));
      WriteFile(box.in_root("v/d" + std::to_string(i) + "/f"), "x");
    }
    Symlink(sentinel, box.in_root("v-link"));
    std::atomic<bool> stop{false};
    std::atomic<long> swapped{0};
    std::thread attacker([&] {
      while (!stop.load()) {
        if (renameat2(AT_FDCWD, box.in_root("v").c_str(), AT_FDCWD, box.in_root("v-link").c_str(),
                      RENAME_EXCHANGE) == 0) {
          ++swapped;
        }
      }
    });
    Status first = box.root().RemoveTree("v");
    Status second = box.root().RemoveTree("v-link");
    stop = true;
    attacker.join();
    exchanges += swapped.load();
    INFO("round " << round << ": " << first.message() << " / " << second.message());
    REQUIRE(SentinelFiles(sentinel) == 10);
    REQUIRE(box.root().RemoveTree("v").ok());
    REQUIRE(box.root().RemoveTree("v-link").ok());
    REQUIRE(box.root().ListDirs()->empty());
  }
  std::cout << "[fsops] volume swap race: " << exchanges << " exchanges\n";
  CHECK(exchanges > 0);
}

// --- listing, space, mount point ----------------------------------------------------------

TEST_CASE("ListDirs lists directories only, sorted", "[fsops][list]") {
  Sandbox box;
  for (const char* name : {"pvc-b", "pvc-a", ".hidden-dir"}) REQUIRE(box.root().MakeDir(name, 0700).ok());
  REQUIRE(box.root().MakeDir("mode-000", 0).ok());
  WriteFile(box.in_root("file"), "x");
  Symlink(box.outside(), box.in_root("link-to-dir"));
  REQUIRE(mkdir(box.in_root("bad\nname").c_str(), 0700) == 0);
  Result<std::vector<std::string>> dirs = box.root().ListDirs();
  REQUIRE(dirs.ok());
  CHECK(*dirs == std::vector<std::string>{".hidden-dir", "mode-000", "pvc-a", "pvc-b"});
}

TEST_CASE("Space reports the filesystem of the root", "[fsops][space]") {
  Sandbox box;
  uint64_t free_bytes = 0, total_bytes = 0;
  REQUIRE(box.root().Space(&free_bytes, &total_bytes).ok());
  struct statvfs vfs;
  REQUIRE(statvfs(box.root_path().c_str(), &vfs) == 0);
  CHECK(total_bytes == static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize);
  CHECK(total_bytes > 0);
  CHECK(free_bytes <= total_bytes);
}

TEST_CASE("FilesystemMounted: a mounted filesystem, not a plain directory or a bind of one", "[fsops][mount]") {
  Sandbox box;
  Status plain = box.root().FilesystemMounted();
  CHECK_FALSE(plain.ok());
  CHECK_THAT(plain.message(), Catch::Contains("is not a mount point"));
  struct Row {
    const char* what;
    std::string source;
    const char* type;
    unsigned long flags;
    const char* says;  // nullptr: accepted
  };
  const Row rows[] = {
      {"tmpfs", "none", "tmpfs", 0, nullptr},
      {"bind mount of a directory", box.outside(), nullptr, MS_BIND, "is a bind mount of the directory"},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    if (!box.Mount(row.source, box.root_path(), row.type, row.flags)) return;
    Result<Root> mounted = Root::Open(box.root_path());
    REQUIRE(mounted.ok());
    Status s = mounted->FilesystemMounted();
    CHECK(s.ok() == (row.says == nullptr));
    if (row.says) CHECK_THAT(s.message(), Catch::Contains(row.says));
    box.Unmount(box.root_path());
  }
}

