// The fake API server's JSON value: picojson's interface (is<T>, get<T>, serialize, ==), but
// copy-on-write. Strings, arrays and objects are shared between copies and copied only when a
// copy is changed through a non-const get, one level at a time. A write that changes one field
// of a stored object therefore copies the path to that field, not the whole tree, and freeing
// an old version frees only what no newer version shares. (With picojson's deep copies, copying
// and freeing trees was a quarter of the fake's time in a burst of deletions; perf.)
//
// The one rule this adds: a reference from a non-const get is good until the value it came
// from is next copied or stored. Copy first, then change the copy.
//
// A stored object's members keep their JSON text once written (AppendStored), so the next
// version's text copies what that version did not change (a watch event is written for each
// version: writing JSON was a third of the fake's instructions; callgrind).
//
// Text is written as picojson writes it (members in name order, numbers), except strings: those
// are escaped as the real API server's Go encoder escapes them ("/" as it is, "<" as \u003c),
// so that clients read what they would read from a real one.
#pragma once
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "json_doc.hpp"

namespace fake {

class Json;
struct JsonNull {};
class JsonObject;
using JsonArray = std::vector<Json>;

namespace json_detail {
// An array or object as its copies share it, with its JSON text once AppendStored wrote it.
template <typename T>
struct Box {
  explicit Box(T value) : v(std::move(value)) {}
  Box(const Box& o) : v(o.v) {}  // a copy is about to change: no text
  T v;
  mutable std::string text;
};
}  // namespace json_detail

class Json {
 public:
  Json() = default;  // null
  explicit Json(bool b) : v_(b) {}
  explicit Json(double n) : v_(n) {
    if (!std::isfinite(n)) throw std::overflow_error("JSON numbers are finite");  // as picojson
  }
  explicit Json(const char* s) : v_(std::make_shared<std::string>(s)) {}
  explicit Json(std::string s) : v_(std::make_shared<std::string>(std::move(s))) {}
  explicit Json(JsonArray a) : v_(std::make_shared<json_detail::Box<JsonArray>>(std::move(a))) {}
  explicit Json(JsonObject o);
  template <typename T>
  Json(const T*) = delete;  // no pointer to bool

  template <typename T>
  bool is() const {
    if constexpr (std::is_same_v<T, JsonNull>) return std::holds_alternative<JsonNull>(v_);
    else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, double>) return std::holds_alternative<T>(v_);
    else return std::holds_alternative<Ptr<T>>(v_);
  }

  template <typename T>
  const T& get() const {
    Expect(is<T>());
    if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, double>) return std::get<T>(v_);
    else if constexpr (std::is_same_v<T, std::string>) return *std::get<Ptr<T>>(v_);
    else return std::get<Ptr<T>>(v_)->v;
  }

  // The value to change: unshared first, so that no copy sees the change.
  template <typename T>
  T& get() {
    Expect(is<T>());
    if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, double>) {
      return std::get<T>(v_);
    } else if constexpr (std::is_same_v<T, std::string>) {
      auto& p = std::get<Ptr<T>>(v_);
      if (p.use_count() > 1) p = std::make_shared<std::string>(*p);
      return *p;
    } else {
      auto& p = std::get<Ptr<T>>(v_);
      if (p.use_count() > 1) p = std::make_shared<json_detail::Box<T>>(*p);
      else if (!p->text.empty()) p->text = std::string();  // it is about to change
      return p->v;
    }
  }

  // The member `key` of an object, or null when it has none (picojson's value::get(key)).
  const Json& get(std::string_view key) const;

  // JSON text: as picojson's serialize() writes it, but for strings, which are written as the
  // API server writes them (AppendJsonString).
  std::string serialize() const {
    std::string out;
    Append(out);
    return out;
  }
  void Append(std::string& out) const { Write(out, -1); }
  // Append for a value that no one changes any more (a stored object), under one lock for all
  // its copies: the texts of its members and their members are kept, and a later version that
  // shares them (a write changes a path, not the whole object) copies their text.
  void AppendStored(std::string& out) const { Write(out, 0); }

  // Whether both hold the same node (so they are equal without looking further).
  bool SharesWith(const Json& o) const;

  friend bool operator==(const Json& a, const Json& b);
  friend bool operator!=(const Json& a, const Json& b) { return !(a == b); }

 private:
  template <typename T>
  using Ptr = std::conditional_t<std::is_same_v<T, std::string>, std::shared_ptr<std::string>,
                                 std::shared_ptr<json_detail::Box<T>>>;

  // depth < 0: text not kept; else this value's depth in a stored object (0 = the object).
  void Write(std::string& out, int depth) const;
  static void AppendKey(std::string& out, char lead, const std::string& key);

  static void Expect(bool ok) {
    if (!ok) throw std::runtime_error("fake::Json: get<T>() of a value that is not a T");  // as picojson's assert
  }

  std::variant<JsonNull, bool, double, Ptr<std::string>, Ptr<JsonArray>, Ptr<JsonObject>> v_;
};

// An object's members, sorted by name as picojson's std::map (and so its text), with the part
// of std::map's interface the fake uses. Kept in one array: objects have a few members, and
// finding one by its length and bytes, copying and freeing an object are cheaper than in a
// tree of nodes. Unlike std::map's, references to members do not survive adding a member.
class JsonObject {
 public:
  using value_type = std::pair<std::string, Json>;
  using iterator = std::vector<value_type>::iterator;
  using const_iterator = std::vector<value_type>::const_iterator;

  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }

  iterator find(std::string_view key) { return begin() + (Find(key) - items_.data()); }
  const_iterator find(std::string_view key) const { return begin() + (Find(key) - items_.data()); }
  size_t count(std::string_view key) const { return find(key) == end() ? 0 : 1; }
  const Json& at(std::string_view key) const {
    auto it = find(key);
    if (it == end()) throw std::out_of_range("fake::JsonObject::at: no member " + std::string(key));
    return it->second;
  }

  Json& operator[](std::string_view key) { return Insert(key, [&] { return std::string(key); }); }
  // operator[] for a key the caller gives away (the parser's).
  Json& Emplace(std::string&& key) { return Insert(key, [&] { return std::move(key); }); }
  iterator erase(const_iterator it) { return items_.erase(it); }
  size_t erase(std::string_view key) {
    auto it = find(key);
    if (it == end()) return 0;
    items_.erase(it);
    return 1;
  }

  friend bool operator==(const JsonObject& a, const JsonObject& b) { return a.items_ == b.items_; }

 private:
  // The member named key, or the end: by length first, then bytes.
  const value_type* Find(std::string_view key) const {
    const value_type* p = items_.data();
    const value_type* e = p + items_.size();
    for (; p != e; ++p)
      if (p->first.size() == key.size() && std::char_traits<char>::compare(p->first.data(), key.data(), key.size()) == 0) break;
    return p;
  }
  // The member named key, added (named by make_key()) if missing. Room for eight members at
  // the first: growing one at a time cost a tenth of the fake's instructions in creates.
  template <typename MakeKey>
  Json& Insert(std::string_view key, MakeKey make_key) {
    if (!items_.empty() && items_.back().first < key) return items_.emplace_back(make_key(), Json()).second;  // keys in order
    auto it = LowerBound(key);
    if (it != end() && it->first == key) return it->second;
    if (items_.capacity() == 0) {
      items_.reserve(8);
      it = items_.begin();
    }
    return items_.emplace(it, make_key(), Json())->second;
  }
  iterator LowerBound(std::string_view key) {
    return std::lower_bound(begin(), end(), key, [](const value_type& m, std::string_view k) { return m.first < k; });
  }

  std::vector<value_type> items_;  // sorted by name
};

inline Json::Json(JsonObject o) : v_(std::make_shared<json_detail::Box<JsonObject>>(std::move(o))) {}

inline const Json& Json::get(std::string_view key) const {
  static const Json kNull;
  const JsonObject& o = get<JsonObject>();
  auto it = o.find(key);
  return it == o.end() ? kNull : it->second;
}

inline bool Json::SharesWith(const Json& o) const {
  if (v_.index() != o.v_.index()) return false;
  if (is<std::string>()) return std::get<Ptr<std::string>>(v_) == std::get<Ptr<std::string>>(o.v_);
  if (is<JsonArray>()) return std::get<Ptr<JsonArray>>(v_) == std::get<Ptr<JsonArray>>(o.v_);
  if (is<JsonObject>()) return std::get<Ptr<JsonObject>>(v_) == std::get<Ptr<JsonObject>>(o.v_);
  return false;  // null, booleans and numbers are not shared
}

inline bool operator==(const Json& a, const Json& b) {
  if (a.v_.index() != b.v_.index()) return false;
  if (a.SharesWith(b)) return true;
  if (a.is<JsonNull>()) return true;
  if (a.is<bool>()) return a.get<bool>() == b.get<bool>();
  if (a.is<double>()) return a.get<double>() == b.get<double>();
  if (a.is<std::string>()) return a.get<std::string>() == b.get<std::string>();
  if (a.is<JsonArray>()) return a.get<JsonArray>() == b.get<JsonArray>();
  return a.get<JsonObject>() == b.get<JsonObject>();
}

namespace json_detail {
// Go's encoding/json table (the API server writes with json.NewEncoder, HTML escaping on):
// [c] is 0 for an ASCII byte copied as is, else the character after the backslash ('u' =
// \u00XX). '/' and DEL are copied; '<', '>' and '&' become \u003c, \u003e and \u0026.
inline const std::array<char, 128>& GoEscapes() {
  static const auto kEscape = [] {
    std::array<char, 128> t{};
    for (int c = 0; c < 0x20; ++c) t[c] = 'u';
    t['"'] = '"';
    t['\\'] = '\\';
    t['\b'] = 'b';  // Go 1.22 and later
    t['\f'] = 'f';
    t['\n'] = 'n';
    t['\r'] = 'r';
    t['\t'] = 't';
    t['<'] = t['>'] = t['&'] = 'u';
    return t;
  }();
  return kEscape;
}

// The length of the valid UTF-8 sequence at s[i] (a byte >= 0x80), or 0 if it is not one
// (as Go's utf8.DecodeRuneInString: no overlong forms, surrogates or code points past U+10FFFF).
inline size_t Utf8Length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0; };
  const unsigned char c = b(0);
  auto cont = [&](size_t k, unsigned char lo = 0x80, unsigned char hi = 0xbf) { return b(k) >= lo && b(k) <= hi; };
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c == 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  if (c == 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;
  if (c >= 0xe1 && c <= 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xf1 && c <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

// How many bytes at the start of s are plain ASCII that Go copies as it is.
inline size_t GoPlainPrefix(std::string_view s) {
  const std::array<char, 128>& escape = GoEscapes();
  size_t plain = 0;
  while (plain < s.size() && static_cast<unsigned char>(s[plain]) < 0x80 && escape[static_cast<unsigned char>(s[plain])] == 0)
    ++plain;
  return plain;
}
}  // namespace json_detail

// s as a JSON string literal, as the API server writes it (Go's encoding/json): GoEscapes for
// ASCII, U+2028 and U+2029 as \u2028 and \u2029, each byte of invalid UTF-8 as \ufffd.
// Plain runs are copied at once.
inline void AppendJsonString(std::string& out, std::string_view s) {
  const size_t n = s.size();
  const size_t plain = json_detail::GoPlainPrefix(s);
  if (plain == n) {  // the common case: quotes around a copy, one growth of `out`
    const size_t at = out.size();
    out.resize(at + n + 2);
    char* d = &out[at];
    d[0] = '"';
    std::memcpy(d + 1, s.data(), n);
    d[n + 1] = '"';
    return;
  }
  const std::array<char, 128>& escape = json_detail::GoEscapes();
  out += '"';
  size_t run = 0;  // start of the bytes not copied yet
  for (size_t i = plain; i < n;) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      const char e = escape[c];
      if (e == 0) {
        ++i;
        continue;
      }
      out.append(s.data() + run, i - run);
      if (e != 'u') {
        const char pair[2] = {'\\', e};
        out.append(pair, 2);
      } else {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      }
      run = ++i;
      continue;
    }
    const size_t len = json_detail::Utf8Length(s, i);
    const bool separator = len == 3 && c == 0xe2 && s[i + 1] == '\x80' && (s[i + 2] == '\xa8' || s[i + 2] == '\xa9');
    if (len != 0 && !separator) {
      i += len;
      continue;
    }
    out.append(s.data() + run, i - run);
    out += len == 0 ? "\\ufffd" : s[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
    i += len == 0 ? 1 : len;
    run = i;
  }
  out.append(s.data() + run, n - run);
  out += '"';
}

// picojson's serialize() (strings as AppendJsonString), copying runs of plain characters at
// once. The texts of members one and two levels down are kept: deeper ones are short and would
// be kept many times.
inline void Json::Write(std::string& out, int depth) const {
  const bool keep = depth >= 1 && depth <= 2;
  const int below = depth < 0 ? -1 : depth + 1;
  auto write_box = [&](const auto& box, auto&& write_members) {
    if (keep && !box.text.empty()) {
      out += box.text;
      return;
    }
    const size_t start = out.size();
    write_members(box.v);
    if (keep) box.text.assign(out, start, std::string::npos);
  };
  switch (v_.index()) {
    case 3:  // string
      AppendJsonString(out, *std::get<Ptr<std::string>>(v_));
      return;
    case 5:  // object
      write_box(*std::get<Ptr<JsonObject>>(v_), [&](const JsonObject& o) {
        char open = '{';
        for (const auto& [key, member] : o) {
          AppendKey(out, open, key);
          open = ',';
          member.Write(out, below);
        }
        if (open == '{') out += '{';
        out += '}';
      });
      return;
    case 4:  // array
      write_box(*std::get<Ptr<JsonArray>>(v_), [&](const JsonArray& a) {
        out += '[';
        bool first = true;
        for (const Json& item : a) {
          if (!first) out += ',';
          first = false;
          item.Write(out, below);
        }
        out += ']';
      });
      return;
    case 2: {  // number: whole ones (counts, sizes) without printf, as "%.f" writes them
      double n = std::get<double>(v_), whole = 0;
      char buf[64];
      if (std::fabs(n) < (1ULL << 53) && std::modf(n, &whole) == 0) {
        auto r = std::to_chars(buf, buf + sizeof buf, static_cast<long long>(n));
        if (n == 0 && std::signbit(n)) out += '-';  // "%.f" keeps the sign of -0
        out.append(buf, r.ptr);
      } else {
        std::snprintf(buf, sizeof buf, "%.17g", n);
        out += buf;
      }
      return;
    }
    case 1: out += std::get<bool>(v_) ? "true" : "false"; return;
    default: out += "null"; return;
  }
}

// `lead` ('{' or ','), then "key": -- in one growth of `out` when the key needs no escapes.
inline void Json::AppendKey(std::string& out, char lead, const std::string& key) {
  const size_t n = key.size();
  if (json_detail::GoPlainPrefix(key) != n) {
    out += lead;
    AppendJsonString(out, key);
    out += ':';
    return;
  }
  const size_t at = out.size();
  out.resize(at + n + 4);
  char* d = &out[at];
  d[0] = lead;
  d[1] = '"';
  std::memcpy(d + 2, key.data(), n);
  d[n + 2] = '"';
  d[n + 3] = ':';
}

}  // namespace fake
