// Text for logs, events and messages: the bodies (text.hpp has the contracts). Hand-written:
// a few lines each, and no Debian library validates UTF-8 the way Go's encoders repair it.
#include "base/text.hpp"

#include <openssl/sha.h>

#include <cstdio>

std::string OneLine(std::string text) {
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return text;
}

std::string CutUtf8(const std::string& text, size_t max) {
  if (text.size() <= max) return text;
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0u) == 0x80u) --end;
  return text.substr(0, end);
}

std::string ValidUtf8(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char b0 = static_cast<unsigned char>(text[i]);
    auto cont = [&](size_t k) { return k < text.size() && (static_cast<unsigned char>(text[k]) & 0xC0u) == 0x80u; };
    auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
    size_t n = 0;
    if (b0 < 0x80) {
      n = 1;
    } else if (b0 >= 0xC2 && b0 <= 0xDF) {
      n = cont(i + 1) ? 2 : 0;
    } else if (b0 >= 0xE0 && b0 <= 0xEF && cont(i + 1) && cont(i + 2)) {
      n = (b0 == 0xE0 && byte(i + 1) < 0xA0) || (b0 == 0xED && byte(i + 1) > 0x9F) ? 0 : 3;
    } else if (b0 >= 0xF0 && b0 <= 0xF4 && cont(i + 1) && cont(i + 2) && cont(i + 3)) {
      n = (b0 == 0xF0 && byte(i + 1) < 0x90) || (b0 == 0xF4 && byte(i + 1) > 0x8F) ? 0 : 4;
    }
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}

std::string HumanBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 6) v /= 1024, ++unit;
  char buf[32];
  std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f %s" : "%.1f %s", v, kUnits[unit]);
  return buf;
}

std::string Sha256Hex(const std::string& text, size_t hex_digits) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < SHA256_DIGEST_LENGTH && out.size() < hex_digits; ++i) {
    out += kHex[digest[i] >> 4];
    if (out.size() < hex_digits) out += kHex[digest[i] & 15];
  }
  return out;
}
