// Text for logs, events and messages: one line, cut without splitting a character, valid UTF-8.
// Pure functions of their arguments; thread-safe.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

// `s`, or `otherwise` when it is empty.
inline std::string Or(const std::string& s, const char* otherwise) { return s.empty() ? otherwise : s; }

// `text` made one line: control characters (below 0x20, and 0x7f) become spaces. Same length.
std::string OneLine(std::string text);

// The first `max` bytes of `text`, not splitting a UTF-8 sequence (so possibly fewer);
// `text` itself when it is no longer than `max`.
std::string CutUtf8(const std::string& text, size_t max);

// `text` with every byte that is not part of a well-formed UTF-8 sequence (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF) replaced by U+FFFD, as Go's encoders
// do: file names may hold any bytes, log collectors and the API want UTF-8. Valid text comes
// back unchanged.
std::string ValidUtf8(const std::string& text);

// "10.0 GiB" (binary units, one decimal; whole bytes as "512 B"), for messages.
std::string HumanBytes(uint64_t bytes);

// The first `hex_digits` (at most 64) lower-case hex digits of the SHA-256 of `text` (OpenSSL):
// a short name that two texts alike at the start still get apart.
std::string Sha256Hex(const std::string& text, size_t hex_digits);
