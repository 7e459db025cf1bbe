// Errors as values: the body of Status (status.hpp has the contract).
#include "base/status.hpp"

Status Status::Wrap(const std::string& context) const {
  return ok() ? *this : Status(code_, context + ": " + message_, errno_);
}
