// Lexical path handling shared by the configuration and the filesystem code (no I/O).
// Pure functions of their arguments; thread-safe.
#pragma once
#include <cstddef>
#include <string>

// Lexically normalises an absolute path into *out: collapses "//" and "/./" and drops a
// trailing "/". Returns false (and leaves *out alone) when the path is empty, relative,
// contains a NUL byte or has any ".." component (refused rather than resolved).
bool NormaliseAbsolute(const std::string& path, std::string* out);

// Is `path` the directory `dir` or inside it, lexically? (`dir` normalised; `path` is
// normalised first, and one that cannot be is not inside anything.) "/base" is not within
// "/bas".
bool PathWithin(const std::string& path, const std::string& dir);

// A DNS-1123 label/subdomain as the API server enforces for namespaces and claim names:
// lowercase letters, digits, '-' and '.', starting and ending alphanumeric, no "..", at most
// `max` characters. Checked again where a name becomes part of a path.
bool IsDnsName(const std::string& s, size_t max);
