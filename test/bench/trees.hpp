// Files the bench writes into volumes: random data that nothing can compress or share, and
// trees of many files (for the usage scan and the clones' sources).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bench {

// Fills `words` with pseudo-random data (xorshift64, carried on in *state).
void FillRandom(std::vector<uint64_t>* words, uint64_t* state);

// Makes `dirs` directories (d0, d1, ...) of `files` files each in `path`, of `bytes` random
// bytes each (0: empty files, for the usage scan, whose walk costs per entry, not per byte, and
// a tmpfs stays small). Throws Failure.
void MakeTree(const std::string& path, int dirs, int files, size_t bytes = 0);

// Writes `bytes` random bytes (FillRandom, from `seed`) to a new file. Throws Failure.
void WriteRandom(const std::string& path, uint64_t bytes, uint64_t seed);

// Flushes the filesystem under `path` (syncfs), so that a copy timed next does not also write
// back its source. Throws Failure.
void SyncFs(const std::string& path);

}  // namespace bench
