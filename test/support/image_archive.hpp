// Helpers of the image archive tests (unit_image, unit_image_platforms): run commands, read a
// ustar archive in memory (independent of GNU tar), and read JSON and blobs so that a bad
// archive fails the test instead of asserting.
#pragma once
#include <picojson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "base/status.hpp"

// The helpers live in a namespace of their own, which the tests use as a whole (as they used
// the unnamed namespace these helpers had when they were defined in this header).
namespace image_archive {

// --- small helpers ------------------------------------------------------------------------

// Returns the whole file, or "" when it cannot be read.
std::string ReadFile(const std::string& path);

// Writes data to path (replacing it); false on failure.
bool WriteFile(const std::string& path, const std::string& data);

// Quotes s for /bin/sh.
std::string Quote(const std::string& s);

// Runs a shell command and returns its exit code (-1 if it did not exit normally).
int Run(const std::string& command);

// Lower-case hex SHA-256 of data (OpenSSL EVP).
std::string Sha256Hex(const std::string& data);

// A fresh folder under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
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
Result<long long> ParseOctal(const std::string& field, const std::string& what);

// Parses a whole POSIX ustar archive held in memory; entries in archive order. Rejects a bad
// header checksum, a non-ustar header, and an archive that ends without its zero block.
Result<std::vector<TarEntry>> ParseTar(const std::string& tar);

// Name → entry; fails the test on a malformed archive or a duplicate name.
std::map<std::string, TarEntry> TarMap(const std::string& tar);

// --- JSON access that fails the test instead of asserting ---------------------------------

picojson::value ParseJson(const std::string& text);
const picojson::value& Get(const picojson::value& v, const std::string& key);
const picojson::value& Get(const picojson::value& v, size_t index);
size_t Len(const picojson::value& v);
std::string Str(const picojson::value& v);
double Num(const picojson::value& v);

// Returns the blob a descriptor {digest, size} names, after checking both.
const std::string& Blob(const std::map<std::string, TarEntry>& archive, const picojson::value& descriptor);

// Gunzips data with gzip(1) through files in dir.
std::string Gunzip(const std::string& dir, const std::string& data);

}  // namespace image_archive

using namespace image_archive;  // NOLINT: see above
