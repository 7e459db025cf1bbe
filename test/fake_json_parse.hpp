// Reads JSON text into the fake's values (fake_json_value.hpp). It accepts what picojson
// accepts, with picojson's error text ("syntax error at line 2 near: ..."), except that text
// after the value is an error, as in the real API server, and that objects count towards the
// nesting limit as arrays do. Strings are copied a run of plain
// characters at a time: picojson reads a character at a time, and parsing request bodies was a
// tenth of the fake's instructions (callgrind).
#pragma once
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>

#include "json_doc.hpp"
#include "status.hpp"
#include "test/fake_json_value.hpp"

namespace fake {
namespace json_detail {

class Parser {
 public:
  explicit Parser(std::string_view text) : p_(text.data()), end_(text.data() + text.size()), begin_(text.data()) {}

  Result<Json> Document() {
    Json v;
    bool ok = Value(v, kMaxDepth);
    if (ok) {
      SkipSpace();
      ok = p_ == end_;
    }
    if (!ok) return Status::Invalid(error_.empty() ? SyntaxError() : error_);
    return v;
  }

 private:
  static constexpr int kMaxDepth = 100;  // arrays and objects (picojson's DEFAULT_MAX_DEPTHS counts arrays only)

  void SkipSpace() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  bool Take(char c) {
    SkipSpace();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }
  // The members of an array or object, from its opening bracket to `close`; `member` reads one.
  template <typename ReadMember>
  bool Members(char close, ReadMember member) {
    ++p_;
    if (Take(close)) return true;
    do {
      if (!member()) return false;
    } while (Take(','));
    return Take(close);
  }

  bool Value(Json& out, int depth) {
    SkipSpace();
    if (p_ == end_) return false;
    switch (*p_) {
      case 'n': return Literal("null", Json(), out);
      case 't': return Literal("true", Json(true), out);
      case 'f': return Literal("false", Json(false), out);
      case '"': {
        ++p_;
        std::string s;
        if (!String(s)) return false;
        out = Json(std::move(s));
        return true;
      }
      case '[':
      case '{':
        if (depth == 0) {
          error_ = "nesting deeper than " + std::to_string(kMaxDepth);
          return false;
        }
        return *p_ == '[' ? Array(out, depth - 1) : Object(out, depth - 1);
      default: return Number(out);
    }
  }

  // A failure stops at the first character that differs, as picojson's.
  bool Literal(std::string_view word, Json value, Json& out) {
    for (char c : word) {
      if (p_ == end_ || *p_ != c) return false;
      ++p_;
    }
    out = std::move(value);
    return true;
  }

  bool Array(Json& out, int depth) {
    JsonArray a;
    if (!Members(']', [&] { return Value(a.emplace_back(), depth); })) return false;
    out = Json(std::move(a));
    return true;
  }

  bool Object(Json& out, int depth) {
    JsonObject o;
    auto member = [&] {
      std::string key;
      return Take('"') && String(key) && Take(':') && Value(o.Emplace(std::move(key)), depth);  // a repeated key: the last wins
    };
    if (!Members('}', member)) return false;
    out = Json(std::move(o));
    return true;
  }

  // As picojson: the characters a number may have, then strtod must take them all.
  bool Number(Json& out) {
    const char* start = p_;
    while (p_ < end_ && ((*p_ >= '0' && *p_ <= '9') || *p_ == '+' || *p_ == '-' || *p_ == 'e' || *p_ == 'E' || *p_ == '.'))
      ++p_;
    if (p_ == start || !((*start >= '0' && *start <= '9') || *start == '-')) {
      p_ = start;
      return false;
    }
    std::string text(start, p_);
    char* stop = nullptr;
    double n = std::strtod(text.c_str(), &stop);
    if (stop != text.c_str() + text.size()) return false;  // after it, as picojson
    if (!std::isfinite(n)) {
      error_ = "number out of range: " + text;
      return false;
    }
    out = Json(n);
    return true;
  }

  // After the opening quote, to after the closing one.
  bool String(std::string& out) {
    while (true) {
      const char* run = p_;
      while (p_ < end_ && *p_ != '"' && *p_ != '\\' && static_cast<unsigned char>(*p_) >= ' ') ++p_;
      out.append(run, p_);
      if (p_ == end_ || static_cast<unsigned char>(*p_) < ' ') return false;
      if (*p_++ == '"') return true;
      if (p_ == end_) return false;
      switch (char e = *p_++) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': if (!Codepoint(out)) return false; break;
        default: return false;
      }
    }
  }

  int Hex4() {
    if (end_ - p_ < 4) {
      p_ = end_;
      return -1;
    }
    int v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = *p_;
      int d = json_text::HexDigit(c);
      if (d < 0) return -1;  // at the character that is not a digit
      v = v * 16 + d;
      ++p_;
    }
    return v;
  }

  // After "\u": one code point (a surrogate pair makes one) as UTF-8.
  bool Codepoint(std::string& out) {
    int u = Hex4();
    if (u < 0) return false;
    if (u >= 0xdc00 && u <= 0xdfff) return false;  // a low surrogate first
    if (u >= 0xd800 && u <= 0xdbff) {
      if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
      p_ += 2;
      int low = Hex4();
      if (low < 0xdc00 || low > 0xdfff) return false;
      u = 0x10000 + ((u - 0xd800) << 10) + (low - 0xdc00);
    }
    json_text::AppendUtf8(static_cast<unsigned long>(u), &out);
    return true;
  }

  // picojson's message: the line of the failure, and the rest of that line from there.
  std::string SyntaxError() const {
    const char* at = p_ < end_ ? p_ : end_;
    int line = 1;
    for (const char* c = begin_; c < at; ++c) line += *c == '\n';
    std::string msg = "syntax error at line " + std::to_string(line) + " near: ";
    for (const char* c = at; c < end_ && *c != '\n'; ++c)
      if (static_cast<unsigned char>(*c) >= ' ') msg += *c;
    return msg;
  }

  const char* p_;
  const char* end_;
  const char* begin_;
  std::string error_;  // a message other than SyntaxError's
};

}  // namespace json_detail

// Parses text as one JSON value (see the top of this file).
inline Result<Json> ParseJson(std::string_view text) { return json_detail::Parser(text).Document(); }

}  // namespace fake
