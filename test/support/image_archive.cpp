// The bodies of image_archive.hpp (the contracts are there).
#include "test/support/image_archive.hpp"

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

namespace image_archive {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
  return static_cast<bool>(out.flush());
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

int Run(const std::string& command) {
  int status = std::system(command.c_str());
  return (status != -1 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
}

std::string Sha256Hex(const std::string& data) {
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

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/unit_image.XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) != nullptr) path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ignored;
  if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
}

Result<long long> ParseOctal(const std::string& field, const std::string& what) {
  long long value = 0;
  size_t i = 0;
  while (i < field.size() && field[i] == ' ') ++i;
  for (; i < field.size() && field[i] != '\0' && field[i] != ' '; ++i) {
    if (field[i] < '0' || field[i] > '7') return Status::Invalid("non-octal " + what + " field");
    value = value * 8 + (field[i] - '0');
  }
  return value;
}

Result<std::vector<TarEntry>> ParseTar(const std::string& tar) {
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

std::map<std::string, TarEntry> TarMap(const std::string& tar) {
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

picojson::value ParseJson(const std::string& text) {
  picojson::value v;
  std::string err = picojson::parse(v, text);
  INFO("JSON: " << text);
  REQUIRE(err.empty());
  return v;
}

const picojson::value& Get(const picojson::value& v, const std::string& key) {
  INFO("key " << key << " in " << v.serialize());
  REQUIRE(v.is<picojson::object>());
  REQUIRE(v.contains(key));
  return v.get(key);
}

const picojson::value& Get(const picojson::value& v, size_t index) {
  INFO("index " << index << " in " << v.serialize());
  REQUIRE(v.is<picojson::array>());
  REQUIRE(index < v.get<picojson::array>().size());
  return v.get(index);
}

size_t Len(const picojson::value& v) {
  REQUIRE(v.is<picojson::array>());
  return v.get<picojson::array>().size();
}

std::string Str(const picojson::value& v) {
  INFO(v.serialize());
  REQUIRE(v.is<std::string>());
  return v.get<std::string>();
}

double Num(const picojson::value& v) {
  INFO(v.serialize());
  REQUIRE(v.is<double>());
  return v.get<double>();
}

const std::string& Blob(const std::map<std::string, TarEntry>& archive, const picojson::value& descriptor) {
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

std::string Gunzip(const std::string& dir, const std::string& data) {
  REQUIRE(WriteFile(dir + "/layer.gz", data));
  REQUIRE(Run("gzip -dc " + Quote(dir + "/layer.gz") + " > " + Quote(dir + "/layer.tar")) == 0);
  return ReadFile(dir + "/layer.tar");
}

}  // namespace image_archive
