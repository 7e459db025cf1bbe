// YAML parsed into picojson values: the body (yaml.hpp has the contract). libyaml parses;
// the mapping of its events to values is hand-written, because libyaml has no schema, no
// alias expansion and no limits on what aliases expand to.
#include "base/yaml.hpp"

#include <yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>

namespace {

using yaml_detail::kMaxBytes;
using yaml_detail::kMaxDepth;
using yaml_detail::kMaxNodes;
constexpr char kStdTag[] = "tag:yaml.org,2002:";

// YAML 1.2 core schema numbers: [-+]?[0-9]+ and [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool IsDecimalNumber(const std::string& s) {
  size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  auto digits = [&] { size_t n = 0; while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++n; return n; };
  size_t int_digits = digits();
  size_t frac_digits = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    frac_digits = digits();
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

// 0x1F and 0o17 (core schema); false when not of that form.
bool ParseRadixInt(const std::string& s, double* out) {
  if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'o')) return false;
  int base = s[1] == 'x' ? 16 : 8;
  double v = 0;
  for (size_t i = 2; i < s.size(); ++i) {
    char c = s[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : 99;
    if (d >= base) return false;
    v = v * base + d;
  }
  *out = v;
  return true;
}

// Resolves scalar text with the core schema: any of its types when `type` is "" (a plain,
// untagged scalar), else only "null", "bool", "int" or "float" (what a !!tag asks for).
// Returns "" or what is wrong.
std::string ResolveCore(const std::string& t, const std::string& type, picojson::value* out) {
  bool any = type.empty();
  auto set = [out](picojson::value v) { *out = std::move(v); return std::string(); };
  if ((any || type == "null") && (t.empty() || t == "~" || t == "null" || t == "Null" || t == "NULL")) {
    return set(picojson::value());
  }
  if (any || type == "bool") {
    if (t == "true" || t == "True" || t == "TRUE") return set(picojson::value(true));
    if (t == "false" || t == "False" || t == "FALSE") return set(picojson::value(false));
  }
  double d = 0;
  bool radix = ParseRadixInt(t, &d), decimal = !radix && IsDecimalNumber(t);
  bool integral = radix || (decimal && t.find_first_of(".eE") == std::string::npos);
  if (any || type == "float" || (type == "int" && integral)) {
    if (decimal) {
      const char* b = t.data() + (t[0] == '+' ? 1 : 0);
      if (std::from_chars(b, t.data() + t.size(), d).ec != std::errc()) d = HUGE_VAL;
    }
    if (radix || decimal) {
      if (!std::isfinite(d)) return "number " + t + " is out of range";
      return set(picojson::value(d));
    }
    std::string u = t.substr(t[0] == '-' || t[0] == '+' ? 1 : 0);
    if (type != "int" && (u == ".inf" || u == ".Inf" || u == ".INF" || u == ".nan" || u == ".NaN" || u == ".NAN")) {
      return t + " cannot be represented in JSON";
    }
  }
  if (any) return set(picojson::value(t));
  return "\"" + t + "\" is not a valid !!" + type;
}

std::string ShortTag(const std::string& tag) {
  return tag.rfind(kStdTag, 0) == 0 ? "!!" + tag.substr(sizeof kStdTag - 1) : tag;
}

// What is wrong with `tag` on a node of `kind` ("scalar", "mapping", "sequence") that does not take it.
std::string TagError(const std::string& tag, const char* kind) {
  for (const char* known : {"str", "int", "float", "bool", "null", "map", "seq"}) {
    if (tag == kStdTag + std::string(known)) return ShortTag(tag) + " on a " + kind;
  }
  return "tag " + ShortTag(tag) + " is not supported (only !!str, !!int, !!float, !!bool, !!null, !!map, !!seq)";
}

// A scalar's value: plain untagged ones by the core schema, others by their tag.
std::string ResolveScalar(const std::string& text, const std::string& tag, bool plain, picojson::value* out) {
  if (tag.empty() && plain) return ResolveCore(text, "", out);
  if (tag.empty() || tag == "!" || tag == std::string(kStdTag) + "str") {
    *out = picojson::value(text);
    return "";
  }
  for (const char* type : {"null", "bool", "int", "float"}) {
    if (tag == kStdTag + std::string(type)) return ResolveCore(text, type, out);
  }
  return TagError(tag, "scalar");
}

std::string At(const yaml_mark_t& m) {
  return "line " + std::to_string(m.line + 1) + ", column " + std::to_string(m.column + 1);
}

// Builds the documents from libyaml's events, without recursion.
class Builder {
 public:
  std::vector<picojson::value> docs;
  yaml_mark_t mark{};  // where the last error is

  // Takes one event; returns "" or what is wrong (at `mark`).
  std::string Add(const yaml_event_t& e) {
    mark = e.start_mark;
    switch (e.type) {
      case YAML_DOCUMENT_START_EVENT:
        anchors_.clear();  // anchors belong to their document
        return "";
      case YAML_SCALAR_EVENT: {
        const auto& s = e.data.scalar;
        std::string text(reinterpret_cast<const char*>(s.value), s.length), tag = Text(s.tag);
        bool plain = tag.empty() && s.style == YAML_PLAIN_SCALAR_STYLE;
        if (plain && text.empty() && stack_.empty() && !s.anchor) return "";  // an empty document
        Node n;
        std::string err = ResolveScalar(text, tag, plain, &n.value);
        if (err.empty()) err = Count(1, text.size());
        if (!err.empty()) return err;
        n.scalar = true, n.merge_key = plain && text == "<<", n.empty_key = plain && text.empty();
        n.text = std::move(text);
        if (s.anchor) Remember(Text(s.anchor), n, 1, n.text.size());
        return Deliver(std::move(n));
      }
      case YAML_ALIAS_EVENT: {
        auto it = anchors_.find(Text(e.data.alias.anchor));
        if (it == anchors_.end()) return "alias *" + Text(e.data.alias.anchor) + " refers to no anchor before it";
        const Anchored& a = it->second;
        if (stack_.size() + a.node.height > kMaxDepth) return DepthError();
        std::string err = Count(a.nodes, a.bytes);
        return err.empty() ? Deliver(Node(a.node)) : err;
      }
      case YAML_SEQUENCE_START_EVENT:
        return Open(false, Text(e.data.sequence_start.tag), Text(e.data.sequence_start.anchor));
      case YAML_MAPPING_START_EVENT:
        return Open(true, Text(e.data.mapping_start.tag), Text(e.data.mapping_start.anchor));
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT:
        return Close();
      default:
        return "";
    }
  }

 private:
  struct Node {
    picojson::value value;
    bool scalar = false;
    std::string text;        // a scalar's text, for use as a key
    bool merge_key = false;  // a plain "<<"
    bool empty_key = false;  // a plain empty scalar
    size_t height = 0;       // levels of collections in value
  };
  struct Anchored {
    Node node;
    size_t nodes, bytes;
  };
  struct Frame {
    Node node;  // value is the array or object being built
    bool mapping;
    std::string anchor;
    yaml_mark_t start;
    size_t nodes_before, bytes_before;
    bool have_key = false, merging = false, merged_once = false;
    std::string key;
    picojson::object merged;  // keys from merge keys, first one wins
  };

  std::vector<Frame> stack_;
  std::map<std::string, Anchored> anchors_;
  size_t nodes_ = 0, bytes_ = 0;

  static std::string Text(const yaml_char_t* s) { return s ? reinterpret_cast<const char*>(s) : ""; }
  static std::string DepthError() { return "nesting deeper than " + std::to_string(kMaxDepth) + " levels"; }

  std::string Count(size_t nodes, size_t bytes) {
    nodes_ += nodes, bytes_ += bytes;
    if (nodes_ <= kMaxNodes && bytes_ <= kMaxBytes) return "";
    return "more than " + std::to_string(kMaxNodes) + " nodes or " + std::to_string(kMaxBytes >> 20) +
           " MiB of text (aliases count each time they are used)";
  }

  void Remember(const std::string& anchor, const Node& n, size_t nodes, size_t bytes) {
    anchors_[anchor] = Anchored{n, nodes, bytes};
  }

  std::string Open(bool mapping, const std::string& tag, const std::string& anchor) {
    if (!tag.empty() && tag != "!" && tag != kStdTag + std::string(mapping ? "map" : "seq")) {
      return TagError(tag, mapping ? "mapping" : "sequence");
    }
    if (stack_.size() + 1 > kMaxDepth) return DepthError();
    size_t nodes = nodes_, bytes = bytes_;
    std::string err = Count(1, 0);
    if (!err.empty()) return err;
    Frame f{};
    f.node.value = mapping ? picojson::value(picojson::object()) : picojson::value(picojson::array());
    f.node.height = 1;
    f.mapping = mapping, f.anchor = anchor, f.start = mark, f.nodes_before = nodes, f.bytes_before = bytes;
    stack_.push_back(std::move(f));
    return "";
  }

  std::string Close() {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    mark = f.start;
    if (f.mapping) {
      picojson::object& obj = f.node.value.get<picojson::object>();
      for (auto& kv : f.merged) obj.emplace(kv.first, std::move(kv.second));  // own keys win
    }
    if (!f.anchor.empty()) Remember(f.anchor, f.node, nodes_ - f.nodes_before, bytes_ - f.bytes_before);
    return Deliver(std::move(f.node));
  }

  // Puts a finished node where it belongs: a document, a sequence item, a key or a value.
  std::string Deliver(Node n) {
    if (stack_.empty()) {
      docs.push_back(std::move(n.value));
      return "";
    }
    Frame& f = stack_.back();
    f.node.height = std::max(f.node.height, n.height + 1);
    if (!f.mapping) {
      f.node.value.get<picojson::array>().push_back(std::move(n.value));
      return "";
    }
    picojson::object& obj = f.node.value.get<picojson::object>();
    if (!f.have_key) {
      if (!n.scalar) return "complex keys (collections as keys) are not supported";
      if (n.empty_key) return "empty keys are not supported";
      if (n.merge_key ? f.merged_once : obj.count(n.text) > 0) return "duplicate key \"" + n.text + "\"";
      f.have_key = true, f.merging = n.merge_key, f.key = std::move(n.text);
      return "";
    }
    f.have_key = false;
    if (!f.merging) {
      obj.emplace(std::move(f.key), std::move(n.value));
      return "";
    }
    f.merged_once = true;
    auto add = [&](picojson::value& m) {
      if (!m.is<picojson::object>()) return false;
      for (auto& kv : m.get<picojson::object>()) f.merged.emplace(kv.first, std::move(kv.second));
      return true;
    };
    bool ok = n.value.is<picojson::array>()
                  ? std::all_of(n.value.get<picojson::array>().begin(), n.value.get<picojson::array>().end(), add)
                  : add(n.value);
    return ok ? "" : "the value of a merge key (<<) must be a mapping or a list of mappings";
  }
};

// libyaml's error as a Status. Reader errors (bad encoding, control characters) carry a byte
// offset rather than a mark: for UTF-8 text it is turned into a line and column here.
Status ParserError(const yaml_parser_t& p, const std::string& text) {
  if (p.error == YAML_MEMORY_ERROR) return Status::Error("YAML parser: out of memory");
  std::string problem = p.problem ? p.problem : "invalid YAML";
  if (p.error != YAML_READER_ERROR) {
    std::string msg = At(p.problem_mark) + ": " + problem;
    if (p.context) msg += " (" + std::string(p.context) + " at " + At(p.context_mark) + ")";
    return Status::Invalid(msg);
  }
  if (p.problem_value != -1) {
    char hex[16];
    std::snprintf(hex, sizeof hex, " (0x%02X)", unsigned(p.problem_value));
    problem += hex;
  }
  if (p.encoding != YAML_UTF8_ENCODING) return Status::Invalid("byte " + std::to_string(p.problem_offset) + ": " + problem);
  yaml_mark_t m{};
  size_t end = std::min(p.problem_offset, text.size());
  for (size_t i = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0; i < end; ++i) {
    char c = text[i];
    if (c == '\n' || (c == '\r' && (i + 1 >= text.size() || text[i + 1] != '\n'))) {
      ++m.line, m.column = 0;
    } else if (c != '\r' && (static_cast<unsigned char>(c) & 0xC0) != 0x80) {
      ++m.column;
    }
  }
  return Status::Invalid(At(m) + ": " + problem);
}

}  // namespace

Result<std::vector<picojson::value>> ParseYamlDocuments(const std::string& text) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) return Status::Error("YAML parser: out of memory");
  std::unique_ptr<yaml_parser_t, void (*)(yaml_parser_t*)> parser_guard(&parser, yaml_parser_delete);
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  Builder builder;
  for (;;) {
    yaml_event_t event;
    if (!yaml_parser_parse(&parser, &event)) return ParserError(parser, text);
    std::unique_ptr<yaml_event_t, void (*)(yaml_event_t*)> event_guard(&event, yaml_event_delete);
    std::string err = builder.Add(event);
    if (!err.empty()) return Status::Invalid(At(builder.mark) + ": " + err);
    if (event.type == YAML_STREAM_END_EVENT) return std::move(builder.docs);
  }
}
