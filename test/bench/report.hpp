// The table the bench prints: sections, and rows of figure, value, target and verdict; and the
// same rows as JSON for build/bench.json.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <picojson.h>

namespace bench {

class Report {
 public:
  // A figure; met = 1 or 0 marks it ok / MISSED against its target, -1: no target.
  void Add(const std::string& figure, const std::string& value, const std::string& target = "", int met = -1);
  // A section's title line; the rows after it are its.
  void Section(const std::string& title);
  // The table on stdout.
  void Print() const;
  // [{"figure": "SECTION: FIGURE", "value", and with a target "target", "met"}].
  picojson::value Json() const;

 private:
  struct Row {
    std::string figure, value, target, verdict;
  };
  std::vector<Row> rows_;
};

// Requests by "verb resource", per volume: "create events 1.00, ..." ("none" if none).
std::string Requests(const std::map<std::string, long>& requests, long volumes);

}  // namespace bench
