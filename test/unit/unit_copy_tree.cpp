// Copying a volume's tree (copy_tree.hpp, file_copy.hpp) against real filesystems: tmpfs, a
// plain temporary directory, and loop-mounted btrfs, XFS (reflink=1) and ext4. The copy is
// checked against the source with a tree walk of our own (type, mode, owner, times in ns, size,
// data, link targets, xattrs, hard-link groups, allocated blocks) and against `cp -a`'s output
// with diff. Cases that need root (mounts, chown, trusted.* xattrs) WARN "SKIPPED" otherwise.
// Figures (time per GiB, per 10,000 files, VmHWM growth) are printed on plain lines.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <random>
#include <string>
#include <vector>

#include "fs/copy_tree.hpp"
#include "fs/file_copy.hpp"
#include "fs/fsops.hpp"
#include "test/support/loopfs.hpp"
#include "test/support/tmpfs.hpp"

namespace {

using fsops_detail::Fd;

bool Root_() { return geteuid() == 0; }

std::string JoinDepths(const std::vector<size_t>& v) {
  std::string s;
  for (size_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

int Sh(const std::string& cmd) { return std::system(cmd.c_str()); }

std::string ShOut(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while (p && (n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (p) ::pclose(p);
  return out;
}

std::string RandomBytes(size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = rng();
    std::memcpy(&s[i], &v, std::min<size_t>(8, n - i));
  }
  return s;
}

void WriteAt(const std::string& path, const std::string& data, off_t at = 0, int flags = O_CREAT | O_WRONLY) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::pwrite(fd, data.data(), data.size(), at) == static_cast<ssize_t>(data.size()));
  ::close(fd);
}
void Write(const std::string& path, const std::string& data) { WriteAt(path, data, 0, O_CREAT | O_WRONLY | O_TRUNC); }

// A big file of random data, written a MiB at a time.
void WriteRandom(const std::string& path, uint64_t bytes, unsigned seed) {
  int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  const std::string chunk = RandomBytes(1 << 20, seed);
  for (uint64_t off = 0; off < bytes; off += chunk.size()) {
    std::string c = chunk;
    std::memcpy(&c[0], &off, sizeof off);  // every MiB differs
    REQUIRE(::write(fd, c.data(), c.size()) == static_cast<ssize_t>(c.size()));
  }
  ::close(fd);
}

void MkDir(const std::string& path, mode_t mode = 0755) { REQUIRE(::mkdir(path.c_str(), mode) == 0); }

// VmHWM or VmRSS of this process, in KiB.
long StatusKiB(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::atol(line.c_str() + std::strlen(field) + 1);
  }
  return -1;
}
// Resets VmHWM to the current RSS, so that a step's own peak can be read afterwards.
void ResetHwm() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
}

long OpenFds() {
  return std::stol(ShOut("ls /proc/" + std::to_string(::getpid()) + "/fd | wc -l"));
}

// A folder for one test, removed at the end (mounts inside first).
class Box {
 public:
  Box() {
    char tmpl[] = "/tmp/hp-copy-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
  }
  ~Box() {
    for (auto it = mounts_.rbegin(); it != mounts_.rend(); ++it) ::umount2(it->c_str(), MNT_DETACH);
    Sh("rm -rf '" + dir_ + "' 2>/dev/null");
  }
  std::string operator()(const std::string& rel = "") const { return rel.empty() ? dir_ : dir_ + "/" + rel; }
  void Mounted(const std::string& path) { mounts_.push_back(path); }

 private:
  std::string dir_;
  std::vector<std::string> mounts_;
};

Result<CopyResult> Copy(const std::string& src, const std::string& dst, const CopyOptions& opt = {}) {
  Fd s(::open(src.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  Fd d(::open(dst.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(s.get() >= 0);
  REQUIRE(d.get() >= 0);
  return CopyContents(s.get(), d.get(), opt);
}

// What a tree walk sees of one entry; two trees are equal when their maps are.
struct Entry {
  mode_t mode = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  int64_t size = 0, atime_ns = 0, mtime_ns = 0;
  std::string target;   // symlink
  std::string data;     // regular file: FNV-1a hash of the contents, with where the holes are not
  std::string xattrs;   // name=value; ... sorted
  std::string link_group;  // regular files with several links: the first path of the group
  int64_t blocks = 0;   // compared separately (the copy may use fewer)
  bool operator==(const Entry& o) const {
    return mode == o.mode && uid == o.uid && gid == o.gid && size == o.size && atime_ns == o.atime_ns &&
           mtime_ns == o.mtime_ns && target == o.target && data == o.data && xattrs == o.xattrs && link_group == o.link_group;
  }
};
std::ostream& operator<<(std::ostream& os, const Entry& e) {
  return os << "mode " << std::oct << e.mode << std::dec << " uid " << e.uid << " gid " << e.gid << " size " << e.size
            << " atime " << e.atime_ns << " mtime " << e.mtime_ns << " target '" << e.target << "' data " << e.data
            << " xattrs {" << e.xattrs << "} links " << e.link_group;
}

std::string Xattrs(const std::string& proc_path) {
  char names[8192];
  ssize_t n = ::llistxattr(proc_path.c_str(), names, sizeof names);
  std::map<std::string, std::string> all;
  for (ssize_t i = 0; n > 0 && i < n; i += static_cast<ssize_t>(std::strlen(names + i)) + 1) {
    char value[8192];
    ssize_t v = ::lgetxattr(proc_path.c_str(), names + i, value, sizeof value);
    all[names + i] = v < 0 ? "?" : std::string(value, static_cast<size_t>(v));
  }
  std::string out;
  for (auto& [k, v] : all) out += k + "=" + v + ";";
  return out;
}

std::string DataOf(int fd) {
  uint64_t h = 1469598103934665603ull;
  std::string layout;
  char buf[1 << 16];
  off_t off = 0;
  for (;;) {
    off_t data = ::lseek(fd, off, SEEK_DATA);
    if (data < 0) break;
    off_t hole = ::lseek(fd, data, SEEK_HOLE);
    layout += std::to_string(data) + "-" + std::to_string(hole) + ",";
    off = hole;
  }
  ::lseek(fd, 0, SEEK_SET);
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) {
    for (ssize_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(buf[i])) * 1099511628211ull;
  }
  (void)layout;  // where the data is depends on the filesystem's allocation: hashed contents only
  return std::to_string(h);
}

// Walks `dir` (not following symlinks, not changing any atime, not entering other mounts),
// keyed by path relative to it ("." for itself). Sockets and FIFOs are left out when asked.
void Walk(int dir_fd, const std::string& rel, dev_t dev, std::map<std::string, Entry>* out, std::map<ino_t, std::string>* groups,
          bool specials) {
  DIR* d = fdopendir(::dup(dir_fd));
  REQUIRE(d != nullptr);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) names.push_back(e->d_name);
  }
  ::closedir(d);
  for (const std::string& name : names) {
    struct stat st;
    REQUIRE(::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0);
    if (st.st_dev != dev) continue;
    if (!specials && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) continue;
    const std::string path = rel.empty() ? name : rel + "/" + name;
    Entry e;
    e.mode = st.st_mode;
    e.uid = st.st_uid;
    e.gid = st.st_gid;
    e.size = S_ISDIR(st.st_mode) ? 0 : st.st_size;
    e.atime_ns = st.st_atim.tv_sec * 1000000000ll + st.st_atim.tv_nsec;
    e.mtime_ns = st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
    e.blocks = st.st_blocks;
    e.xattrs = Xattrs("/proc/self/fd/" + std::to_string(dir_fd) + "/" + name);
    if (S_ISLNK(st.st_mode)) {
      char t[4096];
      ssize_t n = ::readlinkat(dir_fd, name.c_str(), t, sizeof t);
      e.target.assign(t, static_cast<size_t>(std::max<ssize_t>(n, 0)));
    } else if (S_ISREG(st.st_mode)) {
      Fd f(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NOATIME | O_CLOEXEC));
      REQUIRE(f.get() >= 0);
      e.data = DataOf(f.get());
      if (st.st_nlink > 1) {
        auto it = groups->emplace(st.st_ino, path).first;
        it->second = std::min(it->second, path);
        e.link_group = std::to_string(st.st_ino);  // replaced by the group's first path below
      }
    }
    (*out)[path] = e;
    if (S_ISDIR(st.st_mode)) {
      Fd sub(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NOATIME | O_CLOEXEC));
      REQUIRE(sub.get() >= 0);
      Walk(sub.get(), path, dev, out, groups, specials);
    }
  }
}

std::map<std::string, Entry> Snapshot(const std::string& dir, bool specials = false) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOATIME | O_CLOEXEC));
  REQUIRE(fd.get() >= 0);
  struct stat st;
  REQUIRE(::fstat(fd.get(), &st) == 0);
  std::map<std::string, Entry> out;
  std::map<ino_t, std::string> groups;
  Entry self;
  self.mode = st.st_mode;
  self.uid = st.st_uid;
  self.gid = st.st_gid;
  self.atime_ns = st.st_atim.tv_sec * 1000000000ll + st.st_atim.tv_nsec;
  self.mtime_ns = st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
  self.xattrs = Xattrs("/proc/self/fd/" + std::to_string(fd.get()));
  out["."] = self;
  Walk(fd.get(), "", st.st_dev, &out, &groups, specials);
  for (auto& [path, e] : out) {
    if (!e.link_group.empty()) e.link_group = groups.at(static_cast<ino_t>(std::stoull(e.link_group)));
  }
  return out;
}

// Every difference between two snapshots, one line each ("" when equal).
std::string Differences(const std::map<std::string, Entry>& a, const std::map<std::string, Entry>& b) {
  std::ostringstream os;
  for (auto& [path, e] : a) {
    auto it = b.find(path);
    if (it == b.end()) os << "only in the first: " << path << "\n";
    else if (!(it->second == e)) os << path << ":\n  " << e << "\n  " << it->second << "\n";
  }
  for (auto& [path, e] : b) {
    if (!a.count(path)) os << "only in the second: " << path << "\n";
  }
  return os.str();
}

// system.posix_acl_access bytes (linux/posix_acl_xattr.h): user::rwx user:1000:r-- group::r-x
// mask::r-x other::---, as setfacl would write them.
std::string AclBytes() {
  std::string b;
  auto le32 = [&](uint32_t v) { for (int i = 0; i < 4; ++i) b += static_cast<char>(v >> (8 * i)); };
  auto entry = [&](uint16_t tag, uint16_t perm, uint32_t id) {
    b += static_cast<char>(tag), b += static_cast<char>(tag >> 8), b += static_cast<char>(perm), b += '\0';
    le32(id);
  };
  le32(2);  // POSIX_ACL_XATTR_VERSION
  entry(0x01, 7, 0xffffffff);  // ACL_USER_OBJ
  entry(0x02, 4, 1000);        // ACL_USER
  entry(0x04, 5, 0xffffffff);  // ACL_GROUP_OBJ
  entry(0x10, 5, 0xffffffff);  // ACL_MASK
  entry(0x20, 0, 0xffffffff);  // ACL_OTHER
  return b;
}

void SetTimes(const std::string& path, long n) {
  // atime ahead of now, mtime and ctime: under relatime, reading leaves such an atime alone,
  // so the walks and copies of the test do not move the times they compare.
  const time_t now = ::time(nullptr);
  struct timespec ts[2] = {{now + 3600 + n, 123456789 - n}, {1600000000 + n * 7, 987654321 - n}};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), ts, AT_SYMLINK_NOFOLLOW) == 0);
}

// A tree with an entry of every kind. Returns the paths made, parents before children.
std::vector<std::string> MakeEverything(const std::string& s, bool owners) {
  std::vector<std::string> made;
  auto add = [&](const std::string& rel) { made.push_back(rel); return s + "/" + rel; };
  Write(add("random-1"), RandomBytes(1, 1));
  Write(add("random-4095"), RandomBytes(4095, 2));
  Write(add("random-1m3"), RandomBytes((1 << 20) + 3, 3));
  Write(add("empty"), "");
  {
    const std::string sparse = add("sparse-64m");
    WriteAt(sparse, RandomBytes(5000, 4), 1 << 20);
    WriteAt(sparse, RandomBytes(4096, 5), 40 << 20);
    REQUIRE(::truncate(sparse.c_str(), 64 << 20) == 0);
  }
  MkDir(add("d1"));
  MkDir(add("d1/d2"));
  MkDir(add("d1/d2/d3"));
  Write(add("d1/d2/d3/deep-file"), RandomBytes(777, 6));
  MkDir(add("empty-dir"), 0500);
  REQUIRE(::symlink("/etc", add("abs-link").c_str()) == 0);
  REQUIRE(::symlink("../random-1", add("d1/rel-link").c_str()) == 0);
  REQUIRE(::symlink("does/not/exist", add("dangling").c_str()) == 0);
  Write(add("pair-a"), RandomBytes(333, 7));
  REQUIRE(::link((s + "/pair-a").c_str(), add("d1/pair-b").c_str()) == 0);
  Write(add("triple-a"), RandomBytes(2000, 8));
  REQUIRE(::link((s + "/triple-a").c_str(), add("triple-b").c_str()) == 0);
  REQUIRE(::link((s + "/triple-a").c_str(), add("d1/d2/triple-c").c_str()) == 0);
  Write(add("setuid"), "#!/bin/sh\n");
  MkDir(add("sticky"), 0755);
  MkDir(add("setgid-dir"), 0755);
  Write(add("acl-file"), "acl");
  REQUIRE(::lsetxattr((s + "/acl-file").c_str(), "system.posix_acl_access", AclBytes().data(), AclBytes().size(), 0) == 0);
  REQUIRE(::lsetxattr((s + "/d1").c_str(), "system.posix_acl_default", AclBytes().data(), AclBytes().size(), 0) == 0);
  REQUIRE(::setxattr((s + "/random-1").c_str(), "user.colour", "blue", 4, 0) == 0);
  REQUIRE(::setxattr((s + "/d1").c_str(), "user.empty", "", 0, 0) == 0);
  REQUIRE(::setxattr((s + "/d1/d2").c_str(), "user.binary", "\0\1\2", 3, 0) == 0);
  if (owners) {
    REQUIRE(::lsetxattr((s + "/abs-link").c_str(), "trusted.on-a-link", "x", 1, 0) == 0);
    REQUIRE(::setxattr((s + "/pair-a").c_str(), "trusted.hp", "t", 1, 0) == 0);
  }
  REQUIRE(::mkfifo(add("fifo").c_str(), 0644) == 0);
  {
    int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    const std::string path = add("socket");
    REQUIRE(path.size() < sizeof sa.sun_path);
    std::strcpy(sa.sun_path, path.c_str());
    REQUIRE(::bind(sock, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
    ::close(sock);
  }
  if (owners) {
    REQUIRE(::lchown((s + "/random-1").c_str(), 1000, 1000) == 0);
    REQUIRE(::lchown((s + "/d1/d2").c_str(), 1000, 1000) == 0);
    REQUIRE(::lchown((s + "/triple-a").c_str(), 0, 1000) == 0);
    REQUIRE(::lchown((s + "/d1/rel-link").c_str(), 1001, 1002) == 0);
    REQUIRE(::lchown((s + "/setuid").c_str(), 1000, 1000) == 0);
    REQUIRE(::lchown((s + "/setgid-dir").c_str(), 1000, 1000) == 0);
  }
  REQUIRE(::chmod((s + "/setuid").c_str(), 04755) == 0);
  REQUIRE(::chmod((s + "/sticky").c_str(), 01777) == 0);
  REQUIRE(::chmod((s + "/setgid-dir").c_str(), 02775) == 0);
  REQUIRE(::chmod((s + "/random-4095").c_str(), 0600) == 0);
  // Times last, children before their directory.
  for (size_t i = made.size(); i-- > 0;) SetTimes(s + "/" + made[i], static_cast<long>(i));
  SetTimes(s, 999);
  return made;
}

}  // namespace

TEST_CASE("a copy holds every kind of entry as the source has it, as cp -a copies it", "[copy]") {
  Box box;
  const bool root = Root_();
  if (!root) WARN("SKIPPED in part: not root, so no owners, trusted.* xattrs or tmpfs");
  harness::Tmpfs fs(box("fs"), "512m");
  const std::string base = fs.mounted ? fs.dir : box();
  MkDir(base + "/src");
  MkDir(base + "/dst");
  MkDir(base + "/cp");
  MakeEverything(base + "/src", root);
  const auto before = Snapshot(base + "/src");
  REQUIRE(before.at("acl-file").xattrs.find("system.posix_acl_access") != std::string::npos);
  REQUIRE(before.at("sparse-64m").blocks * 512 < (1 << 20));

  Result<CopyResult> r = Copy(base + "/src", base + "/dst");
  REQUIRE(r.ok());
  INFO(r.status().message());
  CHECK(r->method == CopyMethod::kBytes);  // tmpfs has no reflinks
  CHECK(r->skipped_special == 2);          // the FIFO and the socket
  CHECK(r->skipped_mount_count == 0);
  CHECK(r->vanished == 0);
  // The sparse file's data ranges are whole pages: 5000 bytes at 1 MiB make 8 KiB of data.
  CHECK(r->bytes == 1 + 4095 + (1 << 20) + 3 + 8192 + 4096 + 777 + 333 + 2000 + 10 + 3);
  // Everything in the walk but the root and the five extra names of hard-linked files.
  CHECK(r->entries == before.size() - 1 - 3);

  const auto source = Snapshot(base + "/src");
  CHECK(Differences(before, source) == "");  // the copy changed nothing in the source, atimes included
  const auto copy = Snapshot(base + "/dst");
  CHECK(Differences(source, copy) == "");
  for (auto& [path, e] : source) {
    if (S_ISREG(e.mode)) CHECK(copy.at(path).blocks <= e.blocks);  // holes kept
  }
  CHECK(copy.at("setuid").mode == (S_IFREG | 04755));
  CHECK(copy.at("sticky").mode == (S_IFDIR | 01777));
  CHECK(copy.at("setgid-dir").mode == (S_IFDIR | 02775));
  CHECK(copy.at("abs-link").target == "/etc");
  if (root) {
    CHECK(copy.at("d1/rel-link").uid == 1001);
    CHECK(copy.at("abs-link").xattrs == "trusted.on-a-link=x;");
  }
  struct stat a, b, c;
  REQUIRE(::stat((base + "/dst/triple-a").c_str(), &a) == 0);
  REQUIRE(::stat((base + "/dst/triple-b").c_str(), &b) == 0);
  REQUIRE(::stat((base + "/dst/d1/d2/triple-c").c_str(), &c) == 0);
  CHECK((a.st_ino == b.st_ino && b.st_ino == c.st_ino && a.st_nlink == 3));

  // cp -a of the same source: the same tree as ours, but for the FIFO and socket, which it copies.
  REQUIRE(Sh("cp -a --sparse=always '" + base + "/src/.' '" + base + "/cp/'") == 0);
  auto by_cp = Snapshot(base + "/cp");
  CHECK(Differences(copy, by_cp) == "");
  // find's view of both (a directory's size counts its entries on tmpfs: left out).
  const std::string stats = "cd '%s' && find . ! -type p ! -type s \\( -type d -printf '%%p %%M %%U %%G %%A@ %%T@ %%n\\n' "
                            "-o -printf '%%p %%M %%U %%G %%s %%A@ %%T@ %%n %%l\\n' \\) | sort";
  char cmd[1024];
  std::snprintf(cmd, sizeof cmd, stats.c_str(), (base + "/dst").c_str());
  const std::string ours = ShOut(cmd);
  std::snprintf(cmd, sizeof cmd, stats.c_str(), (base + "/cp").c_str());
  CHECK(ours == ShOut(cmd));
  // Last, as removing them changes the directory's times.
  REQUIRE(Sh("rm '" + base + "/cp/fifo' '" + base + "/cp/socket'") == 0);
  const std::string diff = ShOut("diff -r --no-dereference '" + base + "/dst' '" + base + "/cp' 2>&1; echo rc=$?");
  CHECK(diff == "rc=0\n");
}

TEST_CASE("a destination below a default ACL gets the source's ACLs, not inherited ones", "[copy]") {
  Box box;
  MkDir(box("src"));
  MkDir(box("src/dir"));
  Write(box("src/file"), "no ACL");
  Write(box("src/with-acl"), "ACL");
  REQUIRE(::setxattr(box("src/with-acl").c_str(), "system.posix_acl_access", AclBytes().data(), AclBytes().size(), 0) == 0);
  MkDir(box("dst"));
  REQUIRE(::setxattr(box("dst").c_str(), "system.posix_acl_default", AclBytes().data(), AclBytes().size(), 0) == 0);
  Result<CopyResult> r = Copy(box("src"), box("dst"));
  REQUIRE(r.ok());
  const auto source = Snapshot(box("src")), copy = Snapshot(box("dst"));
  CHECK(Differences(source, copy) == "");
  CHECK(copy.at("file").xattrs == "");
  CHECK(copy.at("dir").xattrs == "");
  CHECK(copy.at(".").xattrs == "");
  CHECK(copy.at("with-acl").xattrs.find("system.posix_acl_access") != std::string::npos);
}

TEST_CASE("a symlink to outside is copied as a link and nothing is read through it", "[copy][hostile]") {
  Box box;
  MkDir(box("src"));
  MkDir(box("dst"));
  MkDir(box("outside"));
  Write(box("outside/secret"), "secret");
  REQUIRE(::symlink("/etc", box("src/etc").c_str()) == 0);
  REQUIRE(::symlink(box("outside").c_str(), box("src/out").c_str()) == 0);
  REQUIRE(::symlink(box("outside/secret").c_str(), box("src/secret-file").c_str()) == 0);
  Result<CopyResult> r = Copy(box("src"), box("dst"));
  REQUIRE(r.ok());
  CHECK(r->bytes == 0);
  CHECK(r->entries == 3);
  CHECK(ShOut("cd '" + box("dst") + "' && find . -printf '%y %p %l\\n' | sort") ==
        "d . \nl ./etc /etc\nl ./out " + box("outside") + "\nl ./secret-file " + box("outside/secret") + "\n");
}

TEST_CASE("a directory replaced by a symlink to outside while the walk is below it is not followed", "[copy][hostile]") {
  Box box;
  MkDir(box("src"));
  MkDir(box("dst"));
  MkDir(box("outside"));
  // The same names outside, so that only the inode check (and O_NOFOLLOW) tells them apart.
  std::string in = box("src/a"), out = box("outside");
  MkDir(in);
  for (int i = 0; i < 20; ++i) {
    in += "/b" + std::to_string(i);
    out += "/b" + std::to_string(i);
    MkDir(in);
    MkDir(out);
    Write(in + "/f", "inside");
    Write(out + "/secret", "outside");
  }
  std::atomic<bool> swapped{false};
  CopyOptions opt;
  opt.progress_entries = 1;
  std::string deep = box("dst/a");
  for (int i = 0; i < 15; ++i) deep += "/b" + std::to_string(i);
  opt.progress = [&](const CopyProgress&) {
    // Deep enough that a's descriptor has been closed: the walk must open it again by name.
    struct stat st;
    if (swapped || ::stat(deep.c_str(), &st) != 0) return;
    REQUIRE(::rename(box("src/a").c_str(), box("a-moved").c_str()) == 0);
    REQUIRE(::symlink(box("outside").c_str(), box("src/a").c_str()) == 0);
    swapped = true;
  };
  Result<CopyResult> r = Copy(box("src"), box("dst"), opt);
  REQUIRE(swapped);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::Contains("a: the directory was moved or replaced while being copied"));
  CHECK(ShOut("find '" + box("dst") + "' -name secret") == "");
  Result<Root> root = Root::Open(box());
  REQUIRE(root.ok());
  CHECK(root->RemoveTree("dst").ok());
}

TEST_CASE("a mount inside the source is not entered and is named", "[copy][mount]") {
  Box box;
  if (!Root_()) {
    WARN("SKIPPED: bind mounts need root");
    return;
  }
  MkDir(box("src"));
  MkDir(box("src/sub"));
  MkDir(box("src/plain"));
  MkDir(box("src/plain/tmp"));
  MkDir(box("dst"));
  MkDir(box("elsewhere"));
  Write(box("elsewhere/not-ours"), "x");
  REQUIRE(::mount(box("elsewhere").c_str(), box("src/sub").c_str(), nullptr, MS_BIND, nullptr) == 0);
  box.Mounted(box("src/sub"));
  REQUIRE(::mount("tmpfs", box("src/plain/tmp").c_str(), "tmpfs", 0, "size=1m") == 0);
  box.Mounted(box("src/plain/tmp"));
  Write(box("src/plain/tmp/on-tmpfs"), "y");
  Result<CopyResult> r = Copy(box("src"), box("dst"));
  REQUIRE(r.ok());
  CHECK(r->skipped_mount_count == 2);
  std::vector<std::string> names = r->skipped_mounts;
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"plain/tmp", "sub"});
  CHECK(ShOut("cd '" + box("dst") + "' && find . | sort") == ".\n./plain\n");
}

TEST_CASE("a deep tree is copied with a bounded number of descriptors and memory", "[copy][deep]") {
  Box box;
  MkDir(box("src"));
  MkDir(box("dst"));
  constexpr int kLevels = 3000;
  {
    Fd dir(::open(box("src").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    for (int i = 0; i < kLevels; ++i) {
      REQUIRE(::mkdirat(dir.get(), "d", 0755) == 0);
      int f = ::openat(dir.get(), "f", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
      REQUIRE(::write(f, "x", 1) == 1);
      ::close(f);
      dir = Fd(::openat(dir.get(), "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    }
  }
  const long fds = OpenFds();
  long most = 0;
  CopyOptions opt;
  opt.progress_entries = 50;
  opt.progress = [&](const CopyProgress&) { most = std::max(most, OpenFds() - fds); };
  ResetHwm();
  const long rss = StatusKiB("VmRSS:");
  auto t0 = std::chrono::steady_clock::now();
  Result<CopyResult> r = Copy(box("src"), box("dst"), opt);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(r.ok());
  const long growth = StatusKiB("VmHWM:") - rss;
  std::printf("deep tree, %d levels: %.2f s, VmHWM growth %ld KiB, at most %ld descriptors open besides the test's\n", kLevels,
              secs, growth, most);
  CHECK(r->entries == 2 * kLevels);
  CHECK(most <= static_cast<long>(2 * kCopyOpenDirs + 4));  // + the caller's two, a file pair
  // Down the copy by descriptor (its paths are longer than PATH_MAX): every level is there.
  Fd dir(::open(box("dst").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  int levels = 0;
  struct stat st;
  while (::fstatat(dir.get(), "f", &st, 0) == 0 && st.st_size == 1) {
    ++levels;
    Fd next(::openat(dir.get(), "d", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (next.get() < 0) break;
    dir = std::move(next);
  }
  CHECK(levels == kLevels);
  Result<Root> root = Root::Open(box());
  REQUIRE(root.ok());
  CHECK(root->RemoveTree("src").ok());
  CHECK(root->RemoveTree("dst").ok());
}

TEST_CASE("a wide directory is copied in bounded memory; figures per 10,000 files and per GiB on tmpfs", "[copy][wide]") {
  Box box;
  harness::Tmpfs fs(box("fs"), "2g");
  if (!fs.mounted) return;
  MkDir(fs.dir + "/src");
  MkDir(fs.dir + "/dst");
  constexpr int kFiles = 100000;
  {
    Fd dir(::open((fs.dir + "/src").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    for (int i = 0; i < kFiles; ++i) {
      const std::string name = "file-with-a-longish-name-" + std::to_string(i);
      int f = ::openat(dir.get(), name.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
      REQUIRE(f >= 0);
      REQUIRE(::write(f, "0123456789", 10) == 10);
      ::close(f);
      if (i % 10 == 0) REQUIRE(::linkat(dir.get(), name.c_str(), dir.get(), ("link-" + std::to_string(i)).c_str(), 0) == 0);
    }
  }
  ResetHwm();
  const long rss = StatusKiB("VmRSS:");
  auto t0 = std::chrono::steady_clock::now();
  Result<CopyResult> r = Copy(fs.dir + "/src", fs.dir + "/dst");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(r.ok());
  const long growth = StatusKiB("VmHWM:") - rss;
  std::printf("wide directory, %d files + %d hard links: %.2f s (%.3f s per 10,000 files), VmHWM growth %ld KiB\n", kFiles,
              kFiles / 10, secs, secs * 10000 / kFiles, growth);
  CHECK(r->entries == kFiles);
  CHECK(std::stol(ShOut("ls -f '" + fs.dir + "/dst' | wc -l")) == kFiles + kFiles / 10 + 2);
  CHECK(std::stol(ShOut("find '" + fs.dir + "/dst' -links 2 -type f | wc -l")) == 2 * kFiles / 10);

  // Byte copy speed: 512 MiB of random data, tmpfs to tmpfs.
  MkDir(fs.dir + "/big");
  MkDir(fs.dir + "/big-copy");
  WriteRandom(fs.dir + "/big/data", 512ull << 20, 9);
  t0 = std::chrono::steady_clock::now();
  r = Copy(fs.dir + "/big", fs.dir + "/big-copy");
  const double big_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(r.ok());
  CHECK(r->bytes == 512ull << 20);
  std::printf("byte copy on tmpfs: 512 MiB in %.2f s = %.2f s per GiB\n", big_secs, big_secs * 2);
  CHECK(Sh("cmp -s '" + fs.dir + "/big/data' '" + fs.dir + "/big-copy/data'") == 0);
}

TEST_CASE("a copy canceled halfway stops with kCanceled and leaves a removable tree", "[copy][cancel]") {
  Box box;
  MkDir(box("src"));
  MkDir(box("dst"));
  for (int d = 0; d < 20; ++d) {
    const std::string dir = box("src/d" + std::to_string(d));
    MkDir(dir);
    for (int f = 0; f < 1000; ++f) Write(dir + "/f" + std::to_string(f), "data");
  }
  std::atomic<bool> cancel{false};
  CopyOptions opt;
  opt.cancel = &cancel;
  opt.progress_entries = 1000;
  uint64_t at = 0;
  opt.progress = [&](const CopyProgress& p) {
    if (p.entries >= 10000 && !cancel) {
      at = p.entries;
      cancel = true;
    }
  };
  Result<CopyResult> r = Copy(box("src"), box("dst"), opt);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Status::kCanceled);
  INFO(r.status().message());
  const long made = std::stol(ShOut("find '" + box("dst") + "' | wc -l"));
  CHECK(made > 10000);
  CHECK(made <= static_cast<long>(at) + 2);  // stopped within one entry
  Result<Root> root = Root::Open(box());
  REQUIRE(root.ok());
  CHECK(root->RemoveTree("dst").ok());
  CHECK(::access(box("dst").c_str(), F_OK) != 0);
}

TEST_CASE("a copy canceled inside a big file stops within a few MiB", "[copy][cancel]") {
  Box box;
  MkDir(box("src"));
  MkDir(box("dst"));
  WriteRandom(box("src/big"), 64 << 20, 13);
  std::atomic<bool> cancel{false};
  CopyOptions opt;
  opt.cancel = &cancel;
  opt.progress_bytes = 4 << 20;
  opt.progress = [&](const CopyProgress& p) {
    if (p.bytes >= (16 << 20)) cancel = true;
  };
  Result<CopyResult> r = Copy(box("src"), box("dst"), opt);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Status::kCanceled);
  CHECK_THAT(r.status().message(), Catch::Contains("big"));
  struct stat st;
  REQUIRE(::stat(box("dst/big").c_str(), &st) == 0);
  CHECK(st.st_size <= (16 << 20) + static_cast<off_t>(file_copy::kChunkBytes));
}

TEST_CASE("hard links past the bound are copied as files of their own", "[copy]") {
  Box box;
  MkDir(box("src"));
  MkDir(box("dst"));
  for (int i = 0; i < 5; ++i) {
    const std::string a = box("src/a" + std::to_string(i)), b = box("src/b" + std::to_string(i));
    Write(a, RandomBytes(100, 20 + i));
    REQUIRE(::link(a.c_str(), b.c_str()) == 0);
  }
  CopyOptions opt;
  opt.links_remembered = 2;
  Result<CopyResult> r = Copy(box("src"), box("dst"), opt);
  REQUIRE(r.ok());
  CHECK(r->entries == 2 + 2 * 3);  // two inodes linked, three copied twice
  CHECK(std::stol(ShOut("find '" + box("dst") + "' -type f -links 2 | wc -l")) == 4);
  CHECK(Sh("cd '" + box("src") + "' && for f in *; do cmp -s $f '" + box("dst") + "'/$f || exit 1; done") == 0);
}

TEST_CASE("a copy that does not fit fails with ENOSPC", "[copy][enospc]") {
  Box box;
  MkDir(box("src"));
  harness::Tmpfs small(box("small"), "32m");
  if (!small.mounted) return;
  MkDir(small.dir + "/dst");
  WriteRandom(box("src/big"), 64 << 20, 10);
  Result<CopyResult> r = Copy(box("src"), small.dir + "/dst");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().sys_errno() == ENOSPC);
  CHECK_THAT(r.status().message(), Catch::Contains("big") && Catch::Contains("No space left on device"));
  std::printf("out of space: %s\n", r.status().message().c_str());
}

TEST_CASE("btrfs: a subvolume is snapshotted; a copy is reflinked and barely uses space", "[copy][btrfs]") {
  Box box;
  harness::LoopFs fs(box("btrfs"), "btrfs", "256M");
  if (!fs.mounted) {
    WARN("SKIPPED: " << fs.why);
    return;
  }
  REQUIRE(Sh("btrfs -q subvolume create '" + fs.dir + "/src' >/dev/null") == 0);
  MakeEverything(fs.dir + "/src", true);
  REQUIRE(Sh("btrfs -q subvolume create '" + fs.dir + "/src/nested' >/dev/null") == 0);
  Write(fs.dir + "/src/nested/inside", "x");
  SetTimes(fs.dir + "/src", 5);
  Fd src(::open((fs.dir + "/src").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  Fd top(::open(fs.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(SnapshotSubvolume(src.get(), top.get(), "snap").ok());
  auto source = Snapshot(fs.dir + "/src", true);
  auto snap = Snapshot(fs.dir + "/snap", true);
  // The nested subvolume is not in the snapshot: an empty directory stands in its place.
  CHECK(snap.count("nested/inside") == 0);
  snap.erase("nested");
  snap.erase(".");
  source.erase(".");
  CHECK(Differences(source, snap) == "");
  Write(fs.dir + "/snap/writable", "yes");  // writable, not read-only

  // Refused with kInvalid: a plain directory as source, a name taken, a source elsewhere.
  MkDir(fs.dir + "/plain");
  Fd plain(::open((fs.dir + "/plain").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  Status s = SnapshotSubvolume(plain.get(), top.get(), "snap2");
  CHECK(s.code() == Status::kInvalid);
  CHECK_THAT(s.message(), Catch::Contains("not a btrfs subvolume"));
  Fd tmp(::open(box().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  CHECK(SnapshotSubvolume(tmp.get(), top.get(), "snap3").code() == Status::kInvalid);
  CHECK(SnapshotSubvolume(src.get(), tmp.get(), "snap4").code() == Status::kInvalid);
  CHECK(SnapshotSubvolume(src.get(), top.get(), "snap").code() == Status::kConflict);

  // CopyContents of the subvolume: the nested one is left out and named, the rest reflinked.
  MkDir(fs.dir + "/copy");
  Result<CopyResult> r = Copy(fs.dir + "/src", fs.dir + "/copy");
  REQUIRE(r.ok());
  CHECK(r->method == CopyMethod::kReflink);
  CHECK(r->skipped_mounts.empty());
  CHECK(r->skipped_subvolumes == std::vector<std::string>{"nested"});
  CHECK(r->skipped_subvolume_count == 1);
  auto copy = Snapshot(fs.dir + "/copy");
  source = Snapshot(fs.dir + "/src");
  source.erase(".");
  copy.erase(".");
  CHECK(Differences(source, copy) == "");

  MkDir(fs.dir + "/big");
  MkDir(fs.dir + "/big-copy");
  WriteRandom(fs.dir + "/big/data", 64 << 20, 11);
  ::sync();
  struct statvfs before, after;
  REQUIRE(::statvfs(fs.dir.c_str(), &before) == 0);
  r = Copy(fs.dir + "/big", fs.dir + "/big-copy");
  REQUIRE(r.ok());
  ::sync();
  REQUIRE(::statvfs(fs.dir.c_str(), &after) == 0);
  CHECK(r->method == CopyMethod::kReflink);
  const long long used = (static_cast<long long>(before.f_bfree) - static_cast<long long>(after.f_bfree)) * before.f_frsize;
  std::printf("btrfs reflink copy of 64 MiB: %lld KiB more used\n", used / 1024);
  CHECK(used < (4 << 20));
  CHECK(Sh("cmp -s '" + fs.dir + "/big/data' '" + fs.dir + "/big-copy/data'") == 0);
}

TEST_CASE("XFS with reflink=1 copies by reflink; ext4 byte by byte", "[copy][xfs][ext4]") {
  Box box;
  struct Case {
    const char* type;
    const char* size;
    const char* mkfs;
    CopyMethod want;
  };
  for (const Case& c : {Case{"xfs", "320M", "-m reflink=1", CopyMethod::kReflink}, Case{"ext4", "128M", "", CopyMethod::kBytes}}) {
    SECTION(c.type) {
      harness::LoopFs fs(box(c.type), c.type, c.size, c.mkfs);
      if (!fs.mounted) {
        WARN("SKIPPED: " << fs.why);
        continue;
      }
      MkDir(fs.dir + "/src");
      MkDir(fs.dir + "/dst");
      WriteRandom(fs.dir + "/src/data", 32 << 20, 12);
      Write(fs.dir + "/src/small", "small");
      Write(fs.dir + "/src/empty", "");
      Result<CopyResult> r = Copy(fs.dir + "/src", fs.dir + "/dst");
      REQUIRE(r.ok());
      CHECK(r->method == c.want);
      CHECK(Describe(r->method) == std::string(c.want == CopyMethod::kReflink ? "reflink copy" : "byte copy"));
      CHECK(Differences(Snapshot(fs.dir + "/src"), Snapshot(fs.dir + "/dst")) == "");
    }
  }
}

namespace {

// Descends `depth` levels and comes back up, keeping `keep` open as copy_tree does; returns how
// many directories were opened again by name.
uint64_t Reopens(size_t depth, size_t keep, bool checkpoints) {
  std::vector<size_t> open{0};
  uint64_t reopened = 0;
  auto trim = [&] {
    while (open.size() > keep) {
      const size_t j = checkpoints ? fsops_detail::CheckpointToClose(open) : 1;  // else: the lowest
      open.erase(open.begin() + static_cast<std::ptrdiff_t>(j));
    }
  };
  for (size_t d = 1; d <= depth; ++d) open.push_back(d), trim();
  for (size_t top = depth; top > 1;) {
    open.pop_back();
    --top;
    for (size_t i = open.back() + 1; i <= top; ++i) ++reopened, open.push_back(i), trim();
  }
  return reopened;
}

}  // namespace

TEST_CASE("checkpoints: which open directory to close, and what coming back up costs", "[copy][deep]") {
  struct Case {
    std::vector<size_t> open;
    size_t closed;
  } cases[] = {
      {{0, 1, 2}, 1},                 // the only one between root and top
      {{0, 1, 2, 3, 4, 5, 6, 7, 8}, 1},  // a straight run: the lowest
      {{0, 2, 3, 4, 5, 6, 7, 8, 9}, 2},  // far from the top, wide gaps are fine; close near ones
      {{0, 10, 11, 12}, 2},
  };
  for (const Case& c : cases) {
    INFO("open " << JoinDepths(c.open));
    CHECK(fsops_detail::CheckpointToClose(c.open) == c.closed);
  }
  const uint64_t with = Reopens(10000, kCopyOpenDirs, true), without = Reopens(10000, kCopyOpenDirs, false);
  std::printf("coming back up 10,000 levels with %zu open: %llu reopens with checkpoints, %llu keeping the top ones\n",
              kCopyOpenDirs, static_cast<unsigned long long>(with), static_cast<unsigned long long>(without));
  CHECK(with < 10000 * 14);  // ~ n log2 n
  CHECK(without > 10000ull * 10000 / 16);
}

TEST_CASE("Describe names each method", "[copy]") {
  CHECK(std::string(Describe(CopyMethod::kBytes)) == "byte copy");
  CHECK(std::string(Describe(CopyMethod::kReflink)) == "reflink copy");
  CHECK(std::string(Describe(CopyMethod::kSnapshot)) == "btrfs snapshot");
}
