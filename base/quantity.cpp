// A Kubernetes resource quantity as whole bytes: the body (quantity.hpp has the contract).
// Hand-written: no Debian library reads Kubernetes quantities.
#include "base/quantity.hpp"

#include <cstdint>

Result<int64_t> QuantityToBytes(const std::string& text) {
  auto invalid = [&](const std::string& why) { return Status::Invalid("quantity \"" + text + "\" " + why); };
  constexpr uint64_t kMax = INT64_MAX;
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  std::string digits;  // the significant digits, integer and fraction, without leading zeros
  int decimals = 0, seen = 0;
  bool in_fraction = false;
  for (; i < text.size() && ((text[i] >= '0' && text[i] <= '9') || (text[i] == '.' && !in_fraction)); ++i) {
    if (text[i] == '.') {
      in_fraction = true;
      continue;
    }
    ++seen;
    if (in_fraction) ++decimals;
    if (digits.empty() && text[i] == '0') continue;
    if (digits.size() == 38) return invalid("has more than 38 significant digits");
    digits += text[i];
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
  if (digits.empty()) return int64_t{0};
  if (negative) return invalid("is negative");
  const Status too_large = invalid("is too large (more than 8 EiB)");
  while (exp10 < 0 && digits.back() == '0') digits.pop_back(), ++exp10;  // trailing zeros of the fraction
  if (exp10 < -18) return invalid("has more than 18 decimal places");
  // digits * 10^exp10 = whole + fraction / 10^-exp10, in 64 bits: at most 19 integer digits
  // (more is past 8 EiB) and at most 18 fraction digits.
  const int64_t integer_digits = static_cast<int64_t>(digits.size()) + exp10;
  if (integer_digits > 19) return too_large;
  uint64_t whole = 0, fraction = 0, scale = 1;
  for (int64_t d = 0; d < integer_digits; ++d)
    whole = whole * 10 + (d < static_cast<int64_t>(digits.size()) ? static_cast<unsigned>(digits[d] - '0') : 0);
  for (int64_t d = integer_digits < 0 ? integer_digits : 0; d < 0; ++d) scale *= 10;  // leading zeros of the fraction
  for (size_t d = integer_digits > 0 ? static_cast<size_t>(integer_digits) : 0; d < digits.size(); ++d)
    fraction = fraction * 10 + static_cast<unsigned>(digits[d] - '0'), scale *= 10;
  if (whole > (kMax >> exp2)) return too_large;
  // whole * 2^exp2 + fraction * 2^exp2 / scale, rounded up; the second term by binary long
  // division (fraction < scale <= 10^18 < 2^60, so twice the remainder fits).
  uint64_t quotient = 0;
  for (int b = 0; b < exp2; ++b) {
    fraction *= 2;
    quotient = quotient * 2 + (fraction >= scale ? 1 : 0);
    if (fraction >= scale) fraction -= scale;
  }
  whole = (whole << exp2) + quotient + (fraction != 0 ? 1 : 0);
  if (whole > kMax) return too_large;
  return static_cast<int64_t>(whole);
}

Result<int64_t> DurationSeconds(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return Status::Invalid("\"" + text + "\" is not a duration like 168h, 1h30m or 90s (" + why + ")");
  };
  if (text == "0") return int64_t{0};
  if (text.empty()) return bad("empty");
  constexpr int64_t kMax = 100LL * 366 * 24 * 3600;
  int64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    int64_t n = 0;
    const size_t start = i;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      n = n * 10 + (text[i] - '0');
      if (n > kMax) return bad("more than 100 years");
    }
    if (i == start) return bad("a number must come before each unit");
    if (i == text.size()) return bad("a unit (h, m or s) must follow " + text.substr(start));
    const char unit = text[i++];
    const int64_t scale = unit == 'h' ? 3600 : unit == 'm' ? 60 : unit == 's' ? 1 : 0;
    if (scale == 0) return bad(std::string("unit \"") + unit + "\" is not h, m or s");
    if (i < text.size() && text[i] == 's') return bad("units smaller than a second are not taken");
    total += n * scale;
    if (total > kMax) return bad("more than 100 years");
  }
  return total;
}
