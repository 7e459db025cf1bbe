// The bodies of report.hpp (the contracts are there).
#include "test/bench/report.hpp"

#include <cstdio>

#include "test/bench/common.hpp"

namespace bench {

void Report::Add(const std::string& figure, const std::string& value, const std::string& target, int met) {
  rows_.push_back({figure, value, target, met < 0 ? "" : met ? "ok" : "MISSED"});
}

void Report::Section(const std::string& title) { rows_.push_back({"# " + title, "", "", ""}); }

void Report::Print() const {
  std::printf("\n  %-44s %-38s %-10s\n", "figure", "value", "target");
  for (const Row& r : rows_) {
    if (r.figure.rfind("# ", 0) == 0)
      std::printf("%s\n", r.figure.substr(1).c_str());
    else
      std::printf("  %-44s %-38s %-10s %s\n", r.figure.c_str(), r.value.c_str(), r.target.c_str(), r.verdict.c_str());
  }
}

picojson::value Report::Json() const {
  picojson::array out;
  std::string section;
  for (const Row& r : rows_) {
    if (r.figure.rfind("# ", 0) == 0) {
      section = r.figure.substr(2);
      continue;
    }
    picojson::object o;
    o["figure"] = picojson::value(section + ": " + r.figure);
    o["value"] = picojson::value(r.value);
    if (!r.verdict.empty()) {
      o["target"] = picojson::value(r.target);
      o["met"] = picojson::value(r.verdict == "ok");
    }
    out.emplace_back(o);
  }
  return picojson::value(out);
}

std::string Requests(const std::map<std::string, long>& requests, long volumes) {
  std::string out;
  for (const auto& [k, v] : requests)
    out += (out.empty() ? "" : ", ") + k + Fmt(" %.2f", static_cast<double>(v) / static_cast<double>(volumes));
  return out.empty() ? "none" : out;
}

}  // namespace bench
