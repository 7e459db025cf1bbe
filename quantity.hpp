// A Kubernetes resource quantity ("1Gi", "500M", "1.5", "2e9") as whole bytes, rounded up as
// apimachinery's Quantity.Value() does. Hand-written: no Debian library reads them. The API
// server validates and canonicalises every quantity before the provisioner sees it (the PV's
// capacity is the claim's text as it came), so this only turns one into a number and refuses,
// with a clear message, what it cannot represent exactly.
#pragma once
#include <cstdint>
#include <string>

#include "status.hpp"

// The bytes of a quantity. Errors (kInvalid, naming the text): not a quantity (sign, digits
// with an optional fraction, then n u m k M G T P E, Ki Mi Gi Ti Pi Ei or e<integer>),
// negative, more than 8 EiB, or more than 38 significant digits or 18 decimal places (more
// precision than the API server keeps: it rounds to nano units).
inline Result<int64_t> QuantityToBytes(const std::string& text) {
  auto invalid = [&](const std::string& why) { return Status::Invalid("quantity \"" + text + "\" " + why); };
  using u128 = unsigned __int128;
  constexpr u128 kMax = INT64_MAX;
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  u128 digits = 0;  // the significant digits, integer and fraction
  int significant = 0, decimals = 0, seen = 0;
  bool in_fraction = false;
  for (; i < text.size() && ((text[i] >= '0' && text[i] <= '9') || (text[i] == '.' && !in_fraction)); ++i) {
    if (text[i] == '.') {
      in_fraction = true;
      continue;
    }
    ++seen;
    if (in_fraction) ++decimals;
    if (digits == 0 && text[i] == '0') continue;
    if (++significant > 38) return invalid("has more than 38 significant digits");
    digits = digits * 10 + static_cast<unsigned>(text[i] - '0');
  }
  if (seen == 0) return invalid("is not a number with an optional suffix such as Gi, M or e3");
  int64_t exp10 = -decimals;
  int exp2 = 0;
  const std::string suffix = text.substr(i);
  static const char* const kBinary[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  static const char* const kDecimal[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
  bool known = false;
  for (int k = 0; k < 6 && !known; ++k)
    if (suffix == kBinary[k]) known = true, exp2 = 10 * (k + 1);
  for (int k = 0; k < 10 && !known; ++k)
    if (suffix == kDecimal[k]) known = true, exp10 += 3 * (k - 3);
  if (!known && suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    size_t j = (suffix[1] == '+' || suffix[1] == '-') ? 2 : 1;
    int64_t e = 0;
    known = j < suffix.size();
    for (; j < suffix.size() && known; ++j) {
      known = suffix[j] >= '0' && suffix[j] <= '9' && e <= INT32_MAX / 10;
      e = e * 10 + (suffix[j] - '0');
    }
    known = known && e <= INT32_MAX;  // as Kubernetes' int32 exponent
    exp10 += suffix[1] == '-' ? -e : e;
  }
  if (!known) return invalid("has an unknown suffix \"" + suffix + "\" (use Ki, Mi, Gi, Ti, Pi, Ei, k, M, G, T, P, E)");
  if (digits == 0) return int64_t{0};
  if (negative) return invalid("is negative");
  const Status too_large = invalid("is too large (more than 8 EiB)");
  while (exp10 < 0 && digits % 10 == 0) digits /= 10, ++exp10;  // trailing zeros of the fraction
  if (exp10 < -18) return invalid("has more than 18 decimal places");
  for (; exp10 > 0; --exp10) {
    if (digits > kMax / 10) return too_large;
    digits *= 10;
  }
  // digits * 2^exp2 / 10^-exp10, rounded up: the quotient first, so nothing overflows.
  u128 scale = 1;
  for (; exp10 < 0; ++exp10) scale *= 10;
  u128 whole = digits / scale, rest = digits % scale;
  if (whole > (kMax >> exp2)) return too_large;
  whole <<= exp2;
  rest <<= exp2;  // rest < 10^18 and exp2 <= 60: no overflow
  whole += rest / scale + (rest % scale != 0 ? 1 : 0);
  if (whole > kMax) return too_large;
  return static_cast<int64_t>(whole);
}
