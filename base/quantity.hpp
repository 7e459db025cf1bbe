// A Kubernetes resource quantity ("1Gi", "500M", "1.5", "2e9") as whole bytes, rounded up as
// apimachinery's Quantity.Value() does. Hand-written: no Debian library reads them. The API
// server validates and canonicalises every quantity before the provisioner sees it (the PV's
// capacity is the claim's text as it came), so this only turns one into a number and refuses,
// with a clear message, what it cannot represent exactly.
#pragma once
#include <cstdint>
#include <string>

#include "base/status.hpp"

// The bytes of a quantity. Errors (kInvalid, naming the text): not a quantity (sign, digits
// with an optional fraction, then n u m k M G T P E, Ki Mi Gi Ti Pi Ei or e<integer>),
// negative, more than 8 EiB, or more than 38 significant digits or 18 decimal places (more
// precision than the API server keeps: it rounds to nano units). A fraction of a byte rounds
// up ("1.5" is 2, "1m" is 1); "0" and "0Gi" are 0. Pure; thread-safe.
Result<int64_t> QuantityToBytes(const std::string& text);

// The seconds of a duration as Go's time.ParseDuration writes them, in whole seconds: one or
// more <integer><unit> with units h, m, s ("168h", "1h30m", "90s"); "0" alone is 0. Errors
// (kInvalid, naming the text): anything else (signs, fractions, ms/us/ns, no unit), or more than
// 100 years. Pure; thread-safe. Hand-written: nothing in Debian parses Go durations for C++.
Result<int64_t> DurationSeconds(const std::string& text);
