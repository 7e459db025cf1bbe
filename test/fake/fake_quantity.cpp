// The bodies of fake_quantity.hpp (the contracts are there).
#include "test/fake/fake_quantity.hpp"

#include <cstdint>
#include <string>

namespace quantity_detail {

bool SplitText(const std::string& s, Pieces* p) {
  size_t pos = 0;
  const size_t end = s.size();
  if (pos < end && (s[0] == '-' || s[0] == '+')) {
    p->positive = s[0] == '+';
    ++pos;
  }
  while (pos < end && s[pos] == '0') ++pos;
  if (pos >= end) {
    p->num = p->value = "0";
    return true;
  }
  size_t i = pos;
  while (i < end && IsDigit(s[i])) ++i;
  p->num = s.substr(pos, i - pos);
  if (i >= end) {
    p->value = s;
    return true;
  }
  pos = i;
  if (p->num.empty()) p->num = "0";
  if (s[pos] == '.') {
    i = ++pos;
    while (i < end && IsDigit(s[i])) ++i;
    p->denom = s.substr(pos, i - pos);
    if (i >= end) {
      p->value = s;
      return true;
    }
    pos = i;
  }
  p->value = s.substr(0, pos);
  const size_t suffix_start = pos;
  const std::string suffix_chars = "eEinumkKMGTP";
  while (pos < end && suffix_chars.find(s[pos]) != std::string::npos) ++pos;
  if (pos < end && (s[pos] == '-' || s[pos] == '+')) ++pos;
  while (pos < end && IsDigit(s[pos])) ++pos;
  if (pos < end) return false;
  p->suffix = s.substr(suffix_start);
  return true;
}

bool ParseExponent(const std::string& s, int64_t* out) {
  size_t i = 0;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  if (i >= s.size()) return false;
  int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (!IsDigit(s[i])) return false;
    v = v * 10 + (s[i] - '0');
    if (v > kMaxExponent) return false;
  }
  *out = neg ? -v : v;
  return true;
}

bool InterpretSuffix(const std::string& s, Suffix* out) {
  static const struct {
    const char* text;
    int base;
    int exponent;
  } kTable[] = {{"", 10, 0},   {"n", 10, -9},  {"u", 10, -6},  {"m", 10, -3},  {"k", 10, 3},
                {"M", 10, 6},  {"G", 10, 9},   {"T", 10, 12},  {"P", 10, 15},  {"E", 10, 18},
                {"Ki", 2, 10}, {"Mi", 2, 20},  {"Gi", 2, 30},  {"Ti", 2, 40},  {"Pi", 2, 50},
                {"Ei", 2, 60}};
  for (const auto& e : kTable) {
    if (s == e.text) {
      out->base = e.base;
      out->exponent = e.exponent;
      out->format = e.base == 2 ? QuantityFormat::kBinarySI : QuantityFormat::kDecimalSI;
      return true;
    }
  }
  if (s.size() > 1 && (s[0] == 'e' || s[0] == 'E')) {
    out->base = 10;
    out->format = QuantityFormat::kDecimalExponent;
    return ParseExponent(s.substr(1), &out->exponent);
  }
  return false;
}

void MultiplySmall(std::string* digits, unsigned m) {
  unsigned carry = 0;
  for (size_t i = digits->size(); i-- > 0;) {
    unsigned v = static_cast<unsigned>((*digits)[i] - '0') * m + carry;
    (*digits)[i] = static_cast<char>('0' + v % 10);
    carry = v / 10;
  }
  while (carry > 0) {
    digits->insert(digits->begin(), static_cast<char>('0' + carry % 10));
    carry /= 10;
  }
}

void Increment(std::string* digits) {
  for (size_t i = digits->size(); i-- > 0;) {
    if ((*digits)[i] != '9') {
      ++(*digits)[i];
      return;
    }
    (*digits)[i] = '0';
  }
  digits->insert(digits->begin(), '1');
}

void Normalize(Quantity* q) {
  size_t first = q->digits.find_first_not_of('0');
  if (first == std::string::npos) {
    q->digits = "0";
    q->exponent = 0;
    q->negative = false;
    return;
  }
  size_t last = q->digits.find_last_not_of('0');
  q->exponent += static_cast<int64_t>(q->digits.size() - 1 - last);
  q->digits = q->digits.substr(first, last - first + 1);
}

bool IntegerMagnitude(const Quantity& q, uint64_t* out) {
  if (q.exponent < 0 || q.exponent > 19) return false;
  if (static_cast<int64_t>(q.digits.size()) + q.exponent > 19) return false;
  uint64_t v = 0;
  for (char c : q.digits) v = v * 10 + static_cast<uint64_t>(c - '0');
  for (int64_t i = 0; i < q.exponent; ++i) v *= 10;
  *out = v;
  return true;
}

void RoundUpToNano(Quantity* q) {
  if (IsZero(*q) || q->exponent >= -9) return;
  const int64_t drop = -9 - q->exponent;
  if (drop >= static_cast<int64_t>(q->digits.size())) {
    q->digits = "1";
  } else {
    q->digits.resize(q->digits.size() - static_cast<size_t>(drop));
    Increment(&q->digits);  // the dropped digits end in a non-zero digit
  }
  q->exponent = -9;
  Normalize(q);
}

void CapBinary(Quantity* q) {
  const int64_t int_digits = static_cast<int64_t>(q->digits.size()) + q->exponent;
  if (int_digits < 19) return;
  uint64_t v = 0;
  bool above = int_digits > 19;
  if (!above) {
    // 19 integer digits: compare the integer part, then any fraction.
    if (!IntegerMagnitude(*q, &v)) {
      Quantity whole = *q;
      whole.digits.resize(19);
      whole.exponent = 0;
      IntegerMagnitude(whole, &v);
      above = v >= kMaxInt64;  // equal integer part plus a non-zero fraction is above
    } else {
      above = v > kMaxInt64;
    }
  }
  if (above) {
    q->digits = "9223372036854775807";
    q->exponent = 0;
  }
}

Path ChoosePath(const Pieces& p, const Suffix& sfx) {
  Path path;
  const std::string shifted = p.num + p.denom;
  if (sfx.format == QuantityFormat::kBinarySI) {
    if (!p.denom.empty()) return path;
    const int64_t precision = 14 - static_cast<int64_t>(p.num.size()) - sfx.exponent * 3 / 10;
    if (precision < 0) return path;
    uint64_t value = 0;
    for (char c : shifted) value = value * 10 + static_cast<uint64_t>(c - '0');
    if (value > (kMaxInt64 >> sfx.exponent)) return path;  // the fast path's overflow check
    path.fast = true;
    path.verbatim = sfx.exponent % 10 == 0 && (value & 7) != 0;
    return path;
  }
  const int64_t precision = 18 - static_cast<int64_t>(shifted.size());
  const int64_t scale = sfx.exponent - static_cast<int64_t>(p.denom.size());
  if (precision < 0 || scale < -9) return path;
  path.fast = true;
  const bool ends_000 = shifted.size() >= 3 && shifted.compare(shifted.size() - 3, 3, "000") == 0;
  path.verbatim = scale % 3 == 0 && !ends_000 && shifted[0] != '0';
  return path;
}

const char* DecimalSuffix(int64_t exponent) {
  switch (exponent) {
    case -9: return "n";
    case -6: return "u";
    case -3: return "m";
    case 0: return "";
    case 3: return "k";
    case 6: return "M";
    case 9: return "G";
    case 12: return "T";
    case 15: return "P";
    case 18: return "E";
    default: return nullptr;
  }
}

void ToMultipleOf3(const Quantity& q, std::string* digits, int64_t* exponent) {
  int64_t r = ((q.exponent % 3) + 3) % 3;
  *digits = q.digits + std::string(static_cast<size_t>(r), '0');
  *exponent = q.exponent - r;
}

}  // namespace quantity_detail

Result<Quantity> ParseQuantity(const std::string& text) {
  using namespace quantity_detail;
  auto invalid = [&](const std::string& why) {
    return Status::Invalid("invalid quantity \"" + text + "\": " + why);
  };
  if (text.empty()) return invalid("empty");
  Pieces p;
  if (!SplitText(text, &p))
    return invalid("must be a number with an optional suffix, matching ^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$");
  Suffix sfx;
  if (!InterpretSuffix(p.suffix, &sfx)) return invalid("unknown suffix \"" + p.suffix + "\"");
  const Path path = ChoosePath(p, sfx);
  const bool verbatim = text == "0" || path.verbatim;
  // Kubernetes' slow path parses the number as a decimal, which needs at least one digit.
  if (!path.fast && p.value.find_first_of("0123456789") == std::string::npos)
    return invalid("unable to parse the numeric part");
  Quantity q;
  q.format = sfx.format;
  q.negative = !p.positive;
  q.digits = p.num + p.denom;
  q.exponent = -static_cast<int64_t>(p.denom.size());
  if (sfx.base == 10) {
    q.exponent += sfx.exponent;
  } else {
    for (int64_t i = 0; i < sfx.exponent; i += 10) MultiplySmall(&q.digits, 1024);
  }
  Normalize(&q);
  RoundUpToNano(&q);
  if (q.format == QuantityFormat::kBinarySI) {
    CapBinary(&q);
    if (!IsZero(q) && q.exponent < 0 && static_cast<int64_t>(q.digits.size()) + q.exponent <= 0)
      q.format = QuantityFormat::kDecimalSI;  // 0 < |value| < 1
  }
  if (q.exponent > kMaxExponent) return invalid("too large: the exponent does not fit in 32 bits");
  if (verbatim) {
    q.verbatim = text;
  } else if (q.format == QuantityFormat::kDecimalSI && !IsZero(q)) {
    std::string d;
    int64_t e = 0;
    ToMultipleOf3(q, &d, &e);
    if (e > 18)
      return invalid("too large for decimal suffixes (above 1000E); write it with an exponent, e.g. 1e21");
  }
  return q;
}

std::string CanonicalQuantity(const Quantity& q) {
  using namespace quantity_detail;
  if (!q.verbatim.empty()) return q.verbatim;
  if (IsZero(q)) return "0";
  const std::string sign = q.negative ? "-" : "";
  uint64_t magnitude = 0;
  if (q.format == QuantityFormat::kBinarySI && IntegerMagnitude(q, &magnitude) && magnitude >= 1024) {
    static const char* const kBinary[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    int k = 0;
    while (k < 6 && magnitude % 1024 == 0) {
      magnitude /= 1024;
      ++k;
    }
    return sign + std::to_string(magnitude) + kBinary[k];
  }
  std::string digits;
  int64_t exponent = 0;
  ToMultipleOf3(q, &digits, &exponent);
  if (q.format != QuantityFormat::kDecimalExponent) {
    if (const char* suffix = DecimalSuffix(exponent)) return sign + digits + suffix;
  }
  return sign + digits + (exponent == 0 ? "" : "e" + std::to_string(exponent));
}

bool QuantityBytes(const Quantity& q, int64_t* bytes) {
  using namespace quantity_detail;
  if (IsZero(q)) {
    *bytes = 0;
    return true;
  }
  if (q.exponent > 19) return false;
  const int64_t int_digits = static_cast<int64_t>(q.digits.size()) + q.exponent;
  if (int_digits > 19) return false;
  uint64_t v = 0;
  for (int64_t i = 0; i < int_digits; ++i) {
    v = v * 10 + (i < static_cast<int64_t>(q.digits.size()) ? static_cast<uint64_t>(q.digits[i] - '0') : 0);
  }
  if (q.exponent < 0) ++v;  // a non-zero fraction rounds away from zero
  if (v > kMaxInt64 + (q.negative ? 1 : 0)) return false;
  *bytes = q.negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  return true;
}

