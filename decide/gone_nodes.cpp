// Which nodes have been gone long enough: the bodies (gone_nodes.hpp has the contracts).
#include "decide/gone_nodes.hpp"

#include <iterator>

std::vector<std::string> GoneNodes::Due(Clock::time_point now, const std::set<std::string>& named,
                                        const std::set<std::string>& present) {
  for (auto it = missing_since_.begin(); it != missing_since_.end();)
    it = named.count(it->first) && !present.count(it->first) ? std::next(it) : missing_since_.erase(it);
  std::vector<std::string> due;
  for (const std::string& node : named) {
    if (present.count(node)) continue;
    auto [it, added] = missing_since_.emplace(node, now);
    if (now - it->second >= delay_) due.push_back(node);
  }
  return due;
}

GoneNodes::Clock::time_point GoneNodes::NextDue() const {
  Clock::time_point next = Clock::time_point::max();
  for (const auto& [node, since] : missing_since_)
    if (since + delay_ < next) next = since + delay_;
  return next;
}
