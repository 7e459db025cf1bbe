// Helpers of the image archive tests (unit_image, unit_image_platforms): run commands, read a
// ustar archive in memory (independent of GNU tar), and read JSON and blobs so that a bad
// archive fails the test instead of asserting.
#pragma once
#include <openssl/evp.h>
#include <picojson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "base/status.hpp"

namespace {

// --- small helpers ------------------------------------------------------------------------

// Returns the whole file, or "" when it cannot be read.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Writes data to path (replacing it); false on failure.
inline bool WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
  return static_cast<bool>(out.flush());
}

// Quotes s for /bin/sh.
inline std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs a shell command and returns its exit code (-1 if it did not exit normally).
inline int Run(const std::string& command) {
  int status = std::system(command.c_str());
  return (status != -1 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
}

// Lower-case hex SHA-256 of data (OpenSSL EVP).
inline std::string Sha256Hex(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr) != 1) return "";
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[md[i] >> 4];
    hex += kHex[md[i] & 15];
  }
  return hex;
}

// A fresh folder under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/unit_image.XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) != nullptr) path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// --- a ustar reader: enough to check what the script wrote, independent of GNU tar -------------

struct TarEntry {
  std::string name;  // prefix/name as stored; directories end in '/'
  char type = 0;     // '0' file, '5' directory, anything else is unexpected here
  unsigned mode = 0, uid = 0, gid = 0;
  long long mtime = -1;
  std::string data;
};

// Parses an octal header field (digits, then NUL or space padding).
inline Result<long long> ParseOctal(const std::string& field, const std::string& what) {
  long long value = 0;
  size_t i = 0;
  while (i < field.size() && field[i] == ' ') ++i;
  for (; i < field.size() && field[i] != '\0' && field[i] != ' '; ++i) {
    if (field[i] < '0' || field[i] > '7') return Status::Invalid("non-octal " + what + " field");
    value = value * 8 + (field[i] - '0');
  }
  return value;
}

// Parses a whole POSIX ustar archive held in memory; entries in archive order. Rejects a bad
// header checksum, a non-ustar header, and an archive that ends without its zero block.
inline Result<std::vector<TarEntry>> ParseTar(const std::string& tar) {
  std::vector<TarEntry> entries;
  size_t at = 0;
  while (at + 512 <= tar.size()) {
    std::string h = tar.substr(at, 512);
    if (h == std::string(512, '\0')) return entries;
    long long sum = 0;
    for (size_t i = 0; i < 512; ++i)
      sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(h[i]);
    Result<long long> check = ParseOctal(h.substr(148, 8), "checksum");
    if (!check.ok() || *check != sum) return Status::Invalid("bad header checksum at " + std::to_string(at));
    if (h.compare(257, 8, std::string("ustar\0" "00", 8)) != 0)
      return Status::Invalid("not a POSIX ustar header at " + std::to_string(at));
    auto cstr = [&](size_t off, size_t len) { return std::string(h.c_str() + off, strnlen(h.c_str() + off, len)); };
    TarEntry e;
    std::string prefix = cstr(345, 155);
    e.name = prefix.empty() ? cstr(0, 100) : prefix + "/" + cstr(0, 100);
    e.type = h[156];
    Result<long long> mode = ParseOctal(h.substr(100, 8), "mode"), uid = ParseOctal(h.substr(108, 8), "uid"),
                      gid = ParseOctal(h.substr(116, 8), "gid"), size = ParseOctal(h.substr(124, 12), "size"),
                      mtime = ParseOctal(h.substr(136, 12), "mtime");
    for (const auto* r : {&mode, &uid, &gid, &size, &mtime})
      if (!r->ok()) return r->status();
    e.mode = static_cast<unsigned>(*mode), e.uid = static_cast<unsigned>(*uid);
    e.gid = static_cast<unsigned>(*gid), e.mtime = *mtime;
    at += 512;
    if (at + static_cast<size_t>(*size) > tar.size()) return Status::Invalid("truncated data of " + e.name);
    e.data = tar.substr(at, static_cast<size_t>(*size));
    at += (static_cast<size_t>(*size) + 511) / 512 * 512;
    entries.push_back(std::move(e));
  }
  return Status::Invalid("archive ends without its zero block");
}

// Name → entry; fails the test on a malformed archive or a duplicate name.
inline std::map<std::string, TarEntry> TarMap(const std::string& tar) {
  Result<std::vector<TarEntry>> parsed = ParseTar(tar);
  INFO(parsed.status().message());
  REQUIRE(parsed.ok());
  std::map<std::string, TarEntry> by_name;
  for (TarEntry& e : *parsed) {
    INFO("entry " << e.name);
    REQUIRE(by_name.count(e.name) == 0);
    by_name[e.name] = std::move(e);
  }
  return by_name;
}

// --- JSON access that fails the test instead of asserting ---------------------------------

inline picojson::value ParseJson(const std::string& text) {
  picojson::value v;
  std::string err = picojson::parse(v, text);
  INFO("JSON: " << text);
  REQUIRE(err.empty());
  return v;
}
inline const picojson::value& Get(const picojson::value& v, const std::string& key) {
  INFO("key " << key << " in " << v.serialize());
  REQUIRE(v.is<picojson::object>());
  REQUIRE(v.contains(key));
  return v.get(key);
}
inline const picojson::value& Get(const picojson::value& v, size_t index) {
  INFO("index " << index << " in " << v.serialize());
  REQUIRE(v.is<picojson::array>());
  REQUIRE(index < v.get<picojson::array>().size());
  return v.get(index);
}
inline size_t Len(const picojson::value& v) {
  REQUIRE(v.is<picojson::array>());
  return v.get<picojson::array>().size();
}
inline std::string Str(const picojson::value& v) {
  INFO(v.serialize());
  REQUIRE(v.is<std::string>());
  return v.get<std::string>();
}
inline double Num(const picojson::value& v) {
  INFO(v.serialize());
  REQUIRE(v.is<double>());
  return v.get<double>();
}

// Returns the blob a descriptor {digest, size} names, after checking both.
inline const std::string& Blob(const std::map<std::string, TarEntry>& archive, const picojson::value& descriptor) {
  std::string digest = Str(Get(descriptor, "digest"));
  REQUIRE(digest.rfind("sha256:", 0) == 0);
  std::string path = "blobs/sha256/" + digest.substr(7);
  INFO("blob " << path);
  REQUIRE(archive.count(path) == 1);
  const std::string& data = archive.at(path).data;
  CHECK("sha256:" + Sha256Hex(data) == digest);
  CHECK(Num(Get(descriptor, "size")) == static_cast<double>(data.size()));
  return data;
}


// Gunzips data with gzip(1) through files in dir.
inline std::string Gunzip(const std::string& dir, const std::string& data) {
  REQUIRE(WriteFile(dir + "/layer.gz", data));
  REQUIRE(Run("gzip -dc " + Quote(dir + "/layer.gz") + " > " + Quote(dir + "/layer.tar")) == 0);
  return ReadFile(dir + "/layer.tar");
}

}  // namespace
