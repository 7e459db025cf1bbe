// The bodies of fake_json_text.hpp (the contracts are there).
#include "test/fake/fake_json_text.hpp"

#include <picojson.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

namespace fake {

namespace json_detail {

ParseContext::ParseContext(Json* out, int depth, std::string_view text, std::string* error) : out_(out),
                           depth_(depth), text_(text), error_(error) {}

bool ParseContext::Value(Json* out, int depth, std::string_view text, std::string* error, Input& in) {
  ParseContext ctx(out, depth, text, error);
  if (!picojson::_parse(ctx, in)) return false;
  if (*error == kOutOfRange) {  // picojson goes on after set_number: the number ends here
    const char* end = in.cur();
    const char* start = end;
    while (start > text.data() && std::string_view("0123456789+-eE.").find(start[-1]) != std::string_view::npos) --start;
    *error += ": " + std::string(start, end);
  }
  return error->empty();
}

bool ParseContext::set_number(double n) {
  if (std::isfinite(n)) return Set(Json(n));
  *error_ = kOutOfRange;
  return false;
}

bool ParseContext::parse_string(Input& in) {
  *out_ = Json(std::string());
  return picojson::_parse_string(out_->get<std::string>(), in);
}

bool ParseContext::parse_array_item(Input& in, size_t) {
  JsonArray& a = out_->get<JsonArray>();
  a.emplace_back();
  return Value(&a.back(), depth_ - 1, text_, error_, in);
}

bool ParseContext::parse_object_item(Input& in, const std::string& key) {
  return Value(&out_->get<JsonObject>()[key], depth_ - 1, text_, error_, in);  // a repeated key: the last wins
}

bool ParseContext::Set(Json v) {
  *out_ = std::move(v);
  return true;
}

bool ParseContext::Open(Json container) {
  if (depth_ == 0) {
    *error_ = "nesting deeper than " + std::to_string(kMaxDepth);
    return false;
  }
  return Set(std::move(container));
}

std::string SyntaxError(Input& in) {
  std::string msg = "syntax error at line " + std::to_string(in.line()) + " near: ";
  for (int c = in.getc(); c != -1 && c != '\n'; c = in.getc())
    if (c >= ' ') msg += static_cast<char>(c);
  return msg;
}

size_t Utf8Length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) -> unsigned { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  auto cont = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xbf) { return byte(k) >= lo && byte(k) <= hi; };
  const unsigned c = byte(0);
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c == 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  if (c == 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;
  if (c >= 0xe1 && c <= 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xf1 && c <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

}  // namespace json_detail

Result<Json> ParseJson(std::string_view text) {
  using namespace json_detail;
  Json out;
  std::string error;
  Input in(text.data(), text.data() + text.size());
  if (!ParseContext::Value(&out, kMaxDepth, text, &error, in)) return Status::Invalid(error.empty() ? SyntaxError(in) : error);
  in.skip_ws();
  if (in.getc() != -1) {  // text after the value
    in.ungetc();
    return Status::Invalid(SyntaxError(in));
  }
  return out;
}

void AppendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t len = json_detail::Utf8Length(s, i);
      const std::string_view rune = s.substr(i, len);
      if (len == 0) out += "\\ufffd";
      else if (rune == "\xe2\x80\xa8") out += "\\u2028";
      else if (rune == "\xe2\x80\xa9") out += "\\u2029";
      else out += rune;
      i += len == 0 ? 1 : len;
      continue;
    }
    ++i;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == '<' || c == '>' || c == '&') {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void AppendJson(std::string& out, const Json& v) {
  if (v.is<std::string>()) {
    AppendJsonString(out, v.get<std::string>());
  } else if (v.is<JsonArray>()) {
    out += '[';
    const char* sep = "";
    for (const Json& item : v.get<JsonArray>()) {
      out += sep;
      sep = ",";
      AppendJson(out, item);
    }
    out += ']';
  } else if (v.is<JsonObject>()) {
    out += '{';
    const char* sep = "";
    for (const auto& [key, member] : v.get<JsonObject>()) {
      out += sep;
      sep = ",";
      AppendJsonString(out, key);
      out += ':';
      AppendJson(out, member);
    }
    out += '}';
  } else {
    out += v.to_str();  // null, true, false, numbers ("%.f" for whole ones, else "%.17g")
  }
}

std::string ToText(const Json& v) {
  std::string out;
  AppendJson(out, v);
  return out;
}

}  // namespace fake
