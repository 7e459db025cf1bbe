// The fake API server's JSON values (picojson's) and their text. Reading is picojson's, with
// its error messages, but stricter in two ways the real server shares: text after the value is
// an error, and nesting (of arrays and objects alike) is limited (to 100 here; Go's decoder
// allows 10000), so that no input exhausts the stack. Writing is picojson's layout (members in name order, whole numbers without a fraction)
// with strings escaped as kube-apiserver's Go encoder escapes them, so that clients read what
// they would read from a real one.
#pragma once
#include <picojson.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

#include "base/status.hpp"

namespace fake {

using Json = picojson::value;
using JsonObject = picojson::object;
using JsonArray = picojson::array;
using JsonNull = picojson::null;

namespace json_detail {

constexpr int kMaxDepth = 100;
using Input = picojson::input<const char*>;

// A picojson parse context that builds values as picojson's default one does, but counts
// objects as well as arrays towards the nesting limit and refuses numbers out of range
// (picojson's value(double) would throw). `error` says why it failed, when picojson's syntax
// error would not.
class ParseContext {
 public:
  ParseContext(Json* out, int depth, std::string_view text, std::string* error);
  ParseContext(const ParseContext&) = delete;
  ParseContext& operator=(const ParseContext&) = delete;

  // Parses one value of `text` from `in` into `out`; false on failure.
  static bool Value(Json* out, int depth, std::string_view text, std::string* error, Input& in);

  bool set_null() { return Set(Json()); }
  bool set_bool(bool b) { return Set(Json(b)); }
  bool set_number(double n);
  bool parse_string(Input& in);
  bool parse_array_start() { return Open(Json(JsonArray())); }
  bool parse_array_item(Input& in, size_t);
  bool parse_array_stop(size_t) { return true; }
  bool parse_object_start() { return Open(Json(JsonObject())); }
  bool parse_object_item(Input& in, const std::string& key);
  bool parse_object_stop() { return true; }

 private:
  static constexpr const char* kOutOfRange = "number out of range";

  bool Set(Json v);
  bool Open(Json container);

  Json* out_;
  int depth_;
  std::string_view text_;
  std::string* error_;
};

// picojson's message for a failure at the input's position: its line, and the rest of that line.
std::string SyntaxError(Input& in);

// The length of the valid UTF-8 sequence at s[i] (a byte >= 0x80), or 0 if it is not one, as
// Go's utf8.DecodeRuneInString decides: no overlong forms, surrogates or code points past U+10FFFF.
size_t Utf8Length(std::string_view s, size_t i);

}  // namespace json_detail

// Parses text as one JSON value (see the top of this file).
Result<Json> ParseJson(std::string_view text);

// Appends s as a JSON string literal, as kube-apiserver's Go encoder (encoding/json, HTML
// escaping on) writes it: '"' '\\' \b \f \n \r \t by their short escapes, other control
// characters and '<' '>' '&' as \u00XX, U+2028 and U+2029 as \u2028 and \u2029, each byte
// that is not part of valid UTF-8 as \ufffd, and everything else ('/' and DEL included) as it is.
void AppendJsonString(std::string& out, std::string_view s);

// Appends v as JSON text (see the top of this file).
void AppendJson(std::string& out, const Json& v);

// v as JSON text (see AppendJson).
std::string ToText(const Json& v);

}  // namespace fake
