// libFuzzer target: ParseYamlDocuments. Besides "no crash, no leak, no undefined behaviour,
// never a failure other than kInvalid", it checks that each document it gives, written as
// JSON (which is YAML's flow syntax), parses again to the same value.
// Build and run with `make fuzz` (mk/fuzz.mk).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "yaml.hpp"

namespace {

void Require(bool ok, const char* what, const std::string& detail = "") {
  if (ok) return;
  std::fprintf(stderr, "fuzz_yaml: property failed: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Result<std::vector<picojson::value>> docs = ParseYamlDocuments(text);
  if (!docs.ok()) {
    Require(docs.status().code() == Status::kInvalid, "refused with a code other than kInvalid",
            docs.status().message());
    Require(docs.status().message().compare(0, 5, "line ") == 0, "error message does not start with \"line N\"",
            docs.status().message());
    return 0;
  }
  for (const picojson::value& doc : *docs) {
    const std::string json = doc.serialize();
    Result<std::vector<picojson::value>> again = ParseYamlDocuments(json);
    Require(again.ok(), "the document written as JSON does not parse", json + "\n" + again.status().message());
    Require(again->size() == 1 && (*again)[0] == doc, "the document written as JSON parses to another value", json);
  }
  return 0;
}
