// The bodies of trees.hpp (the contracts are there).
#include "test/bench/trees.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "test/bench/common.hpp"

namespace bench {

void FillRandom(std::vector<uint64_t>* words, uint64_t* state) {
  for (uint64_t& w : *words) {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    w = *state;
  }
}

void MakeTree(const std::string& path, int dirs, int files, size_t bytes) {
  std::vector<uint64_t> data((bytes + 7) / 8);
  uint64_t state = 0x9E3779B97F4A7C15ULL;
  FillRandom(&data, &state);
  for (int d = 0; d < dirs; ++d) {
    std::string dir = path + "/d" + std::to_string(d);
    if (::mkdir(dir.c_str(), 0755) != 0) throw Failure("cannot create " + dir);
    for (int f = 0; f < files; ++f) {
      int fd = ::open((dir + "/f" + std::to_string(f)).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) throw Failure("cannot create a file in " + dir);
      bool written = bytes == 0 || ::write(fd, data.data(), bytes) == static_cast<ssize_t>(bytes);
      ::close(fd);
      if (!written) throw Failure("cannot write a file in " + dir);
    }
  }
}

void WriteRandom(const std::string& path, uint64_t bytes, uint64_t seed) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Failure("cannot create " + path);
  std::vector<uint64_t> chunk(1 << 17);  // 1 MiB
  uint64_t state = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (uint64_t done = 0; done < bytes;) {
    FillRandom(&chunk, &state);
    size_t n = static_cast<size_t>(std::min<uint64_t>(bytes - done, chunk.size() * sizeof chunk[0]));
    if (::write(fd, chunk.data(), n) != static_cast<ssize_t>(n)) {
      ::close(fd);
      throw Failure("cannot write " + path);
    }
    done += n;
  }
  ::close(fd);
}

void SyncFs(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || ::syncfs(fd) != 0) throw Failure("cannot flush the filesystem of " + path);
  ::close(fd);
}

}  // namespace bench
