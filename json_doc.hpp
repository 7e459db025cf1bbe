// JSON text read in one pass into a flat array of nodes that point into the text: no tree of
// allocations, and a string is copied out only when a caller asks for it. The reader checks
// what a JSON text from the API server must be: RFC 8259 syntax, UTF-8 (no overlong forms, no
// surrogates), numbers within double's range, at most 256 levels of nesting, at most 64 MiB.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "status.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace json_text {

// `text` made one line: control characters become spaces.
inline std::string OneLine(std::string text) {
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return text;
}

// The first `max` bytes of `text`, not splitting a UTF-8 sequence.
inline std::string CutUtf8(std::string_view text, size_t max) {
  if (text.size() <= max) return std::string(text);
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0u) == 0x80u) --end;
  return std::string(text.substr(0, end));
}

// Length of the UTF-8 sequence starting at s[i] if it is well formed (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), else 0.
inline size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u; };
  auto cont = [&](size_t k) { return (byte(k) & 0xC0u) == 0x80u; };
  const unsigned b0 = byte(i);
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    const unsigned b1 = byte(i + 1);
    if (!cont(i + 1) || !cont(i + 2)) return 0;
    if (b0 == 0xE0 && b1 < 0xA0) return 0;  // overlong
    if (b0 == 0xED && b1 > 0x9F) return 0;  // surrogates
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    const unsigned b1 = byte(i + 1);
    if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
    if (b0 == 0xF0 && b1 < 0x90) return 0;  // overlong
    if (b0 == 0xF4 && b1 > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace json_text

enum class JsonType : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };

// "null", "boolean", "number", "string", "array" or "object", for error messages.
inline const char* JsonTypeName(JsonType t) {
  static const char* const kNames[] = {"null", "boolean", "number", "string", "array", "object"};
  return kNames[static_cast<int>(t)];
}

class JsonRef;

// One JSON text, read. The document does not copy the text: the text must outlive the
// document and every JsonRef into it. Not copyable or movable (JsonRefs point to it); Read
// may be called again to reuse it.
class JsonDoc {
 public:
  static constexpr size_t kMaxBytes = size_t{64} << 20;
  static constexpr int kMaxDepth = 256;

  JsonDoc() = default;
  JsonDoc(const JsonDoc&) = delete;
  JsonDoc& operator=(const JsonDoc&) = delete;

  // Reads `text`. Errors (kInvalid) say "invalid JSON at byte N: why" (bad syntax, trailing
  // data, invalid UTF-8, a bad escape, nesting deeper than 256 levels, a number beyond
  // double's range); text over 64 MiB is refused unread. After an error the document is empty.
  Status Read(std::string_view text);

  // The top value (absent before a successful Read).
  JsonRef root() const;

 private:
  friend class JsonRef;
  class Reader;
  struct Node {
    uint32_t begin;  // first byte of the value; of a string, the byte after its opening quote
    uint32_t end;    // one past the last byte; of a string, its closing quote
    uint32_t after;  // the index of the node after this value and everything inside it
    JsonType type;
    bool escaped;  // a string holding a backslash escape
  };
  std::string_view text_;
  std::vector<Node> nodes_;
};

// A value inside a JsonDoc, or absent (a member that is not there). Cheap to copy; valid
// while its document is unchanged.
class JsonRef {
 public:
  JsonRef() = default;

  // These four and node() are in every field read: inlined even at -Os (as calls they cost
  // more than what they do).
  [[gnu::always_inline]] bool absent() const { return doc_ == nullptr; }
  // Absent or JSON null: "not set" to the Kubernetes API.
  [[gnu::always_inline]] bool unset() const { return absent() || type() == JsonType::kNull; }
  [[gnu::always_inline]] JsonType type() const { return node().type; }
  [[gnu::always_inline]] bool is(JsonType t) const { return !absent() && type() == t; }

  // The member `key` of an object (the last one if the key repeats, as Go's decoder does),
  // or absent: also when this is not an object.
  JsonRef Get(std::string_view key) const;

  // Calls f(key, value) for each member of an object, in order.
  template <class F>
  void ForEachMember(F f) const {
    ForEachMemberRef([&](JsonRef key, JsonRef value) { f(key.String(), value); });
  }
  // ForEachMember with the key as a string JsonRef, decoded only if f asks (StringIs, String).
  template <class F>
  void ForEachMemberRef(F f) const {
    if (!is(JsonType::kObject)) return;
    for (uint32_t k = index_ + 1; k < node().after; k = doc_->nodes_[k + 1].after) f(JsonRef(doc_, k), JsonRef(doc_, k + 1));
  }

  // Calls f(index, value) for each element of an array, in order.
  template <class F>
  void ForEachItem(F f) const {
    if (!is(JsonType::kArray)) return;
    size_t n = 0;
    for (uint32_t k = index_ + 1; k < node().after; k = doc_->nodes_[k].after) f(n++, JsonRef(doc_, k));
  }

  // The decoded text of a string; "" for anything else.
  std::string String() const;
  // Whether this is a string whose decoded text is s (without decoding it unless it has escapes).
  bool StringIs(std::string_view s) const;
  // The value of a number; 0 for anything else.
  double Number() const;
  // The value of a boolean; false for anything else.
  bool Bool() const { return is(JsonType::kBool) && doc_->text_[node().begin] == 't'; }
  // The value's JSON text as it was read ("" when absent).
  std::string_view Text() const;

 private:
  friend class JsonDoc;
  JsonRef(const JsonDoc* doc, uint32_t index) : doc_(doc), index_(index) {}
  [[gnu::always_inline]] const JsonDoc::Node& node() const { return doc_->nodes_[index_]; }
  // The raw bytes between a string's quotes.
  std::string_view Raw() const { return doc_->text_.substr(node().begin, node().end - node().begin); }

  const JsonDoc* doc_ = nullptr;
  uint32_t index_ = 0;
};

namespace json_text {

inline int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The four hex digits at s[i..i+3] as a number, or -1.
inline long Hex4(std::string_view s, size_t i) {
  if (i + 4 > s.size()) return -1;
  long v = 0;
  for (size_t k = i; k < i + 4; ++k) {
    int d = HexDigit(s[k]);
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

inline void AppendUtf8(unsigned long cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Decodes the bytes between a string's quotes, which JsonDoc::Read has checked.
inline std::string Unescape(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  size_t i = 0;
  while (i < raw.size()) {
    const size_t slash = raw.find('\\', i);
    out.append(raw, i, (slash == std::string_view::npos ? raw.size() : slash) - i);
    if (slash == std::string_view::npos) break;
    const char e = raw[slash + 1];
    i = slash + 2;
    switch (e) {
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case 'u': {
        unsigned long cp = static_cast<unsigned long>(Hex4(raw, i));
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {  // a high surrogate; Read checked the low one follows
          cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<unsigned long>(Hex4(raw, i + 2)) - 0xDC00);
          i += 6;
        }
        AppendUtf8(cp, &out);
        break;
      }
      default: out.push_back(e);  // '"', '\\' or '/'
    }
  }
  return out;
}

// JSON's escapes as picojson writes them ('/' too, control characters and DEL as \u00XX):
// [c] is 0 for a character copied as is, else the character after the backslash ('u' = \u00XX).
inline const std::array<char, 256>& JsonEscapes() {
  static const auto kEscape = [] {
    std::array<char, 256> t{};
    for (int c = 0; c < 0x20; ++c) t[c] = 'u';
    t[0x7f] = 'u';
    t['"'] = '"';
    t['\\'] = '\\';
    t['/'] = '/';
    t['\b'] = 'b';
    t['\f'] = 'f';
    t['\n'] = 'n';
    t['\r'] = 'r';
    t['\t'] = 't';
    return t;
  }();
  return kEscape;
}

// How many characters at the start of s are written as they are.
inline size_t PlainPrefix(std::string_view s) {
  const std::array<char, 256>& escape = JsonEscapes();
  size_t plain = 0;
  while (plain < s.size() && escape[static_cast<unsigned char>(s[plain])] == 0) ++plain;
  return plain;
}

// s as a JSON string literal (JsonEscapes), copying runs of plain characters at once.
// json_write.hpp and the fake's JSON writer use it.
inline void AppendJsonString(std::string& out, std::string_view s) {
  const std::array<char, 256>& kEscape = JsonEscapes();
  const char* p = s.data();
  const size_t n = s.size();
  const size_t plain = PlainPrefix(s);
  if (plain == n) {  // the common case: quotes around a copy, one growth of `out`
    const size_t at = out.size();
    out.resize(at + n + 2);
    char* d = &out[at];
    d[0] = '"';
    std::memcpy(d + 1, p, n);
    d[n + 1] = '"';
    return;
  }
  out += '"';
  size_t run = 0;
  for (size_t i = plain; i < n; ++i) {
    const char e = kEscape[static_cast<unsigned char>(p[i])];
    if (e == 0) continue;
    out.append(p + run, i - run);
    run = i + 1;
    if (e != 'u') {
      const char pair[2] = {'\\', e};
      out.append(pair, 2);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", p[i] & 0xff);
      out += buf;
    }
  }
  out.append(p + run, n - run);
  out += '"';
}

}  // namespace json_text

// The recursive-descent reader behind JsonDoc::Read. Every failure records its byte offset
// and reason and returns false.
class JsonDoc::Reader {
 public:
  Reader(std::string_view s, std::vector<Node>* nodes) : s_(s), nodes_(*nodes) {}

  Status Run() {
    if (Value(0)) {
      SkipSpace();
      if (i_ == s_.size()) return Status::Ok();
      Fail(i_, "unexpected data after the value");
    }
    return Status::Invalid("invalid JSON at byte " + std::to_string(at_) + ": " + why_);
  }

 private:
  bool Fail(size_t at, std::string why) {
    at_ = at;
    why_ = std::move(why);
    return false;
  }
  bool EndOrSyntax() {
    if (i_ >= s_.size()) return Fail(s_.size(), "unexpected end of input");
    return Fail(i_, "syntax error near \"" + json_text::OneLine(json_text::CutUtf8(s_.substr(i_, 20), 20)) + "\"");
  }
  void SkipSpace() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }
  // The end of the run of plain ASCII in a string (no quote, backslash, control or non-ASCII
  // byte) that starts at `from`. Sixteen bytes at a time where SSE2 is there (every x86-64),
  // then a table, with local pointers: this loop was 12 % of the provisioner's instructions in
  // make bench's bursts when it compared each byte four ways and stored the member index at
  // every step.
  size_t PlainRunEnd(size_t from) const {
    static constexpr auto kPlain = [] {
      std::array<bool, 256> t{};
      for (int c = 0x20; c < 0x80; ++c) t[c] = c != '"' && c != '\\';
      return t;
    }();
    const char* p = s_.data() + from;
    const char* const end = s_.data() + s_.size();
#if defined(__SSE2__)
    // As signed bytes, both control characters and bytes from 0x80 are below 0x20.
    const __m128i space = _mm_set1_epi8(0x20), quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
    for (; end - p >= 16; p += 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const __m128i stop =
          _mm_or_si128(_mm_cmplt_epi8(v, space), _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
      if (const int mask = _mm_movemask_epi8(stop); mask != 0)
        return static_cast<size_t>(p - s_.data()) + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    }
#endif
    while (p != end && kPlain[static_cast<unsigned char>(*p)]) ++p;
    return static_cast<size_t>(p - s_.data());
  }
  uint32_t Push(JsonType type, size_t begin) {
    nodes_.push_back(Node{static_cast<uint32_t>(begin), 0, 0, type, false});
    return static_cast<uint32_t>(nodes_.size() - 1);
  }
  void Close(uint32_t n, size_t end) {
    nodes_[n].end = static_cast<uint32_t>(end);
    nodes_[n].after = static_cast<uint32_t>(nodes_.size());
  }

  bool Value(int depth) {
    SkipSpace();
    if (i_ >= s_.size()) return EndOrSyntax();
    switch (s_[i_]) {
      case '{': return Container(depth, JsonType::kObject, '}');
      case '[': return Container(depth, JsonType::kArray, ']');
      case '"': return String();
      case 't': return Literal("true", JsonType::kBool);
      case 'f': return Literal("false", JsonType::kBool);
      case 'n': return Literal("null", JsonType::kNull);
      default:
        if (s_[i_] == '-' || (s_[i_] >= '0' && s_[i_] <= '9')) return Number();
        return EndOrSyntax();
    }
  }

  bool Literal(std::string_view word, JsonType type) {
    for (size_t k = 0; k < word.size(); ++k, ++i_)
      if (i_ >= s_.size() || s_[i_] != word[k]) return EndOrSyntax();
    Close(Push(type, i_ - word.size()), i_);
    return true;
  }

  bool Digits() {
    if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '9') return EndOrSyntax();
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    return true;
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  bool Number() {
    const size_t begin = i_;
    if (s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0') {
      ++i_;
    } else if (!Digits()) {
      return false;
    }
    const size_t int_digits = i_ - begin;
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (!Digits()) return false;
    }
    bool exponent = false;
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      exponent = true;
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!Digits()) return false;
    }
    const std::string_view text = s_.substr(begin, i_ - begin);
    if ((exponent || int_digits > 300) && std::isinf(std::strtod(std::string(text).c_str(), nullptr)))
      return Fail(begin, "number " + json_text::CutUtf8(text, 40) + " is beyond the range of a double");
    Close(Push(JsonType::kNumber, begin), i_);
    return true;
  }

  bool String() {
    const uint32_t n = Push(JsonType::kString, ++i_);
    for (;;) {
      i_ = PlainRunEnd(i_);  // the common case: a run of plain ASCII
      if (i_ >= s_.size()) return EndOrSyntax();
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') break;
      if (c < 0x20) return EndOrSyntax();
      if (c >= 0x80) {
        const size_t len = json_text::Utf8SequenceLength(s_, i_);
        if (len == 0) return Fail(i_, "invalid UTF-8");
        i_ += len;
        continue;
      }
      nodes_[n].escaped = true;
      if (!Escape()) return false;
    }
    Close(n, i_);
    ++i_;
    return true;
  }

  // At a backslash: one escape, a surrogate pair as one.
  bool Escape() {
    const size_t at = i_++;
    if (i_ >= s_.size()) return EndOrSyntax();
    const char e = s_[i_];
    if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
      ++i_;
      return true;
    }
    if (e != 'u') return Fail(at, "bad escape");
    const long cp = json_text::Hex4(s_, i_ + 1);
    if (cp < 0) return Fail(at, "bad \\u escape");
    i_ += 5;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return Fail(at, "lone surrogate in a \\u escape");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      const long low = i_ + 1 < s_.size() && s_[i_] == '\\' && s_[i_ + 1] == 'u' ? json_text::Hex4(s_, i_ + 2) : -1;
      if (low < 0xDC00 || low > 0xDFFF) return Fail(at, "lone surrogate in a \\u escape");
      i_ += 6;
    }
    return true;
  }

  // An object's members or an array's elements, up to `close`.
  bool Container(int depth, JsonType type, char close) {
    if (depth + 1 > kMaxDepth) return Fail(i_, "nested deeper than " + std::to_string(kMaxDepth) + " levels");
    const uint32_t n = Push(type, i_++);
    SkipSpace();
    if (i_ < s_.size() && s_[i_] == close) {
      Close(n, ++i_);
      return true;
    }
    for (;;) {
      if (type == JsonType::kObject) {
        SkipSpace();
        if (i_ >= s_.size() || s_[i_] != '"') return EndOrSyntax();
        if (!String()) return false;
        SkipSpace();
        if (i_ >= s_.size() || s_[i_] != ':') return EndOrSyntax();
        ++i_;
      }
      if (!Value(depth + 1)) return false;
      SkipSpace();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == close) break;
      return EndOrSyntax();
    }
    Close(n, ++i_);
    return true;
  }

  std::string_view s_;
  std::vector<Node>& nodes_;
  size_t i_ = 0;
  size_t at_ = 0;
  std::string why_;
};

inline Status JsonDoc::Read(std::string_view text) {
  constexpr size_t kKeptNodes = 4096;  // a big document's nodes are not kept for the next one
  if (nodes_.capacity() > kKeptNodes) std::vector<Node>().swap(nodes_);
  nodes_.clear();
  text_ = std::string_view();
  if (text.size() > kMaxBytes)
    return Status::Invalid("invalid JSON: " + std::to_string(text.size()) + " bytes is over the 64 MiB limit");
  Status s = Reader(text, &nodes_).Run();
  if (!s.ok()) {
    nodes_.clear();
    return s;
  }
  text_ = text;
  return s;
}

inline JsonRef JsonDoc::root() const { return nodes_.empty() ? JsonRef() : JsonRef(this, 0); }

// Called for every field the decoders read: a tight loop over the node array (at -Os the
// accessors it used were calls, and this was 9.6 % of the provisioner's instructions).
inline JsonRef JsonRef::Get(std::string_view key) const {
  if (!is(JsonType::kObject)) return JsonRef();
  const JsonDoc::Node* nodes = doc_->nodes_.data();
  const char* text = doc_->text_.data();
  uint32_t found = 0;  // the value's index; 0 (the root) is never a member
  for (uint32_t k = index_ + 1, end = nodes[index_].after; k < end; k = nodes[k + 1].after) {
    const JsonDoc::Node& name = nodes[k];
    const size_t len = name.end - name.begin;
    const bool same = name.escaped ? JsonRef(doc_, k).String() == key
                                   : len == key.size() && (len == 0 || std::memcmp(text + name.begin, key.data(), len) == 0);
    if (same) found = k + 1;
  }
  return found == 0 ? JsonRef() : JsonRef(doc_, found);
}

inline bool JsonRef::StringIs(std::string_view s) const {
  if (!is(JsonType::kString)) return false;
  if (node().escaped) return String() == s;
  const std::string_view raw = Raw();
  return raw.size() == s.size() && (s.empty() || std::memcmp(raw.data(), s.data(), s.size()) == 0);
}

inline std::string JsonRef::String() const {
  if (!is(JsonType::kString)) return std::string();
  return node().escaped ? json_text::Unescape(Raw()) : std::string(Raw());
}

inline double JsonRef::Number() const {
  if (!is(JsonType::kNumber)) return 0;
  return std::strtod(std::string(Text()).c_str(), nullptr);
}

inline std::string_view JsonRef::Text() const {
  if (absent()) return std::string_view();
  const JsonDoc::Node& n = node();
  if (n.type == JsonType::kString) return doc_->text_.substr(n.begin - 1, n.end - n.begin + 2);
  return doc_->text_.substr(n.begin, n.end - n.begin);
}
