// libFuzzer target: the fake API server's JSON reading and writing (fake_json_text.hpp) against
// picojson's, which they follow. Properties:
//  - the fake reads a text exactly when picojson reads it with nothing but spaces after it
//    (or refuses it as nested too deep: picojson does not count objects);
//  - what the fake writes (picojson's layout, the API server's string escapes) picojson and
//    the fake read; unless invalid UTF-8 was replaced, both read it back equal to what was
//    read first, and the fake writes that the same;
//  - what the fake writes is valid UTF-8 with no '<', '>', '&', U+2028 or U+2029 left as they
//    are (Go's encoder escapes them), and every '/' as it is (Go does not escape it).
// Build and run with `make fuzz` (mk/fuzz.mk).
#include <picojson.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "test/fake/fake_json.hpp"

namespace {

void Require(bool ok, const char* what, const std::string& detail) {
  if (ok) return;
  std::fprintf(stderr, "fuzz_fake_json: property failed: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// picojson's reading of the whole text: its parse stops after the value, so the rest must be space.
bool PicojsonReads(const std::string& text, picojson::value& out) {
  std::string err;
  auto end = picojson::parse(out, text.begin(), text.end(), &err);
  if (!err.empty()) return false;
  return std::all_of(end, text.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; });
}

// Whether JSON text has the escape \/ (a backslash is only ever the start of an escape).
bool EscapesSlash(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\\' && ++i < text.size() && text[i] == '/') return true;
  return false;
}

// Whether s is valid UTF-8 (RFC 3629: no overlong forms, surrogates or code points past U+10FFFF).
bool ValidUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    uint32_t cp = len == 1 ? c : c & (0x7f >> len);
    for (size_t k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b >> 6) != 2) return false;
      cp = cp << 6 | (b & 0x3f);
    }
    static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += len;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  picojson::value expected;
  bool pico = false;
  try {
    pico = PicojsonReads(text, expected);
  } catch (const std::overflow_error&) {  // picojson throws on numbers out of range
    pico = false;
  }
  auto parsed = fake::ParseJson(text);
  if (pico && !parsed.ok() && parsed.status().message().rfind("nesting deeper than", 0) == 0) return 0;  // objects count
  Require(parsed.ok() == pico, pico ? "the fake refuses what picojson reads" : "the fake reads what picojson refuses",
          text + "\n" + (parsed.ok() ? std::string() : parsed.status().message()));
  if (!parsed.ok()) return 0;
  const std::string written = fake::ToText(*parsed);
  picojson::value reread;
  Require(PicojsonReads(written, reread), "picojson refuses what the fake writes", text + "\n" + written);
  auto again = fake::ParseJson(written);
  Require(again.ok(), "the fake refuses what it wrote", written);
  // Equal, unless invalid UTF-8 was written as U+FFFD (as the API server's encoder does; that
  // may also reorder members).
  if (written.find("\\ufffd") == std::string::npos) {
    Require(*again == *parsed && fake::ToText(*again) == written, "what the fake wrote does not read back equal",
            written);
    Require(reread == expected, "picojson reads what the fake wrote as another value", written);
  }

  Require(written.find_first_of("<>&") == std::string::npos, "'<', '>' or '&' written as it is", written);
  Require(written.find("\xe2\x80\xa8") == std::string::npos && written.find("\xe2\x80\xa9") == std::string::npos,
          "U+2028 or U+2029 written as it is", written);
  Require(!EscapesSlash(written), "'/' written as \\/", written);
  Require(ValidUtf8(written), "invalid UTF-8 written", written);
  return 0;
}
