// libFuzzer target: ParseYamlDocuments. Besides "no crash, no leak, no undefined behaviour":
// a failure is kInvalid with a message that gives the place ("line L, column C: " or, in
// UTF-16 text, "byte N: "); a success holds at most kMaxNodes nodes in all, none nested deeper
// than kMaxDepth; and each document, written as JSON (which is YAML's flow syntax), parses
// again to the same value.
// Build and run with `make fuzz` (mk/fuzz.mk).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include "base/yaml.hpp"

namespace {

void Require(bool ok, const char* what, const std::string& detail = "") {
  if (ok) return;
  std::fprintf(stderr, "fuzz_yaml: property failed: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// Adds the nodes of v to *nodes and notes its longest key as JSON; returns its depth in collections.
size_t Walk(const picojson::value& v, size_t* nodes, size_t* longest_key) {
  ++*nodes;
  size_t depth = 0;
  if (v.is<picojson::array>()) {
    for (const auto& item : v.get<picojson::array>()) depth = std::max(depth, Walk(item, nodes, longest_key));
    return depth + 1;
  }
  if (v.is<picojson::object>()) {
    for (const auto& kv : v.get<picojson::object>()) {
      ++*nodes;  // the key
      *longest_key = std::max(*longest_key, picojson::value(kv.first).serialize().size());
      depth = std::max(depth, Walk(kv.second, nodes, longest_key));
    }
    return depth + 1;
  }
  return 0;
}

// picojson writes these characters as they are, but YAML forbids them unescaped (C1 controls,
// U+FFFE, U+FFFF) or reads them as line breaks (U+0085, U+2028, U+2029).
bool HasCharsYamlReadsOtherwise(const std::string& json) {
  for (size_t i = 0; i + 1 < json.size(); ++i) {
    unsigned char a = json[i], b = json[i + 1], c = i + 2 < json.size() ? json[i + 2] : 0;
    if (a == 0xC2 && b >= 0x80 && b <= 0x9F) return true;
    if (a == 0xE2 && b == 0x80 && (c == 0xA8 || c == 0xA9)) return true;
    if (a == 0xEF && b == 0xBF && (c == 0xBE || c == 0xBF)) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Result<std::vector<picojson::value>> docs = ParseYamlDocuments(text);
  if (!docs.ok()) {
    const std::string& m = docs.status().message();
    Require(docs.status().code() == Status::kInvalid, "refused with a code other than kInvalid", m);
    static const std::regex place("^(line [1-9][0-9]*, column [1-9][0-9]*|byte [0-9]+): .");
    Require(std::regex_search(m.substr(0, 48), place), "error message does not start with the place", m);
    return 0;
  }
  size_t nodes = 0;
  for (const picojson::value& doc : *docs) {
    size_t longest_key = 0;
    Require(Walk(doc, &nodes, &longest_key) <= yaml_detail::kMaxDepth, "a document nests deeper than kMaxDepth");
    // A JSON key is an implicit key, which YAML limits to 1024 characters.
    if (longest_key > 1000) continue;
    const std::string json = doc.serialize();
    if (HasCharsYamlReadsOtherwise(json)) continue;
    Result<std::vector<picojson::value>> again = ParseYamlDocuments(json);
    Require(again.ok(), "the document written as JSON does not parse", json + "\n" + again.status().message());
    Require(again->size() == 1 && (*again)[0] == doc, "the document written as JSON parses to another value", json);
  }
  Require(nodes <= yaml_detail::kMaxNodes, "more nodes than kMaxNodes", std::to_string(nodes));
  return 0;
}
