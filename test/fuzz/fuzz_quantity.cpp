// libFuzzer target: resource quantities. For every text ParseQuantity accepts, its canonical
// form (CanonicalQuantity) must parse again to the same value, print the same canonical form
// (a fixed point; one extra step only where Kubernetes takes it too, see below), and give the
// same byte count (QuantityBytes). A verbatim string form must
// be the text itself. The provisioner's QuantityToBytes (quantity.hpp) must give the same bytes
// for every non-negative text that fits, or refuse it as too large or too precise, and refuse
// everything Kubernetes' parser refuses. Build and run with `make fuzz` (mk/fuzz.mk).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/quantity.hpp"
#include "test/fake/fake_quantity.hpp"

namespace {

void Require(bool ok, const char* what, const std::string& text, const std::string& canonical = "") {
  if (ok) return;
  std::fprintf(stderr, "fuzz_quantity: property failed: %s\n  text: \"%s\"\n  canonical: \"%s\"\n", what,
               text.c_str(), canonical.c_str());
  std::abort();
}

bool SameValue(const Quantity& a, const Quantity& b) {
  return a.negative == b.negative && a.digits == b.digits && a.exponent == b.exponent;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Result<Quantity> q = ParseQuantity(text);
  Result<int64_t> provisioner = QuantityToBytes(text);
  if (!provisioner.ok()) Require(provisioner.status().code() == Status::kInvalid, "QuantityToBytes: not kInvalid", text);
  if (!q.ok()) {
    Require(!provisioner.ok(), "QuantityToBytes accepts what Kubernetes refuses", text);
    Require(q.status().code() == Status::kInvalid, "refused with a code other than kInvalid", text);
    return 0;
  }
  Require(q->verbatim.empty() || q->verbatim == text, "verbatim form is not the text", text, q->verbatim);
  Require(!q->digits.empty() && (q->digits == "0" || (q->digits.front() != '0' && q->digits.back() != '0')),
          "digits are not normalized", text, q->digits);
  Require(!(q->digits == "0" && (q->negative || q->exponent != 0)), "zero is not canonical", text);

  const std::string canonical = CanonicalQuantity(*q);
  Result<Quantity> again = ParseQuantity(canonical);
  Require(again.ok(), "the canonical form does not parse", text, canonical + " / " + again.status().message());
  Require(SameValue(*again, *q), "the canonical form parses to another value", text, canonical);
  // Kubernetes prints a BinarySI integer that is no multiple of 1024 without a suffix
  // ("1105562.5Ki" -> "1132096000"), which reads back as DecimalSI ("1132096k"): one more
  // step is allowed there, and only there; after it the form must be a fixed point.
  const std::string second = CanonicalQuantity(*again);
  if (second != canonical) {
    Require(q->format == QuantityFormat::kBinarySI && canonical.back() != 'i',
            "the canonical form is not a fixed point", text, canonical + " -> " + second);
    Result<Quantity> third = ParseQuantity(second);
    Require(third.ok() && SameValue(*third, *q) && CanonicalQuantity(*third) == second,
            "the second canonical form is not a fixed point", text, canonical + " -> " + second);
  }

  int64_t bytes = 0, bytes_again = 0;
  const bool fits = QuantityBytes(*q, &bytes);
  if (provisioner.ok()) {
    Require(fits && *provisioner == bytes, "QuantityToBytes gives other bytes than Value()", text);
  } else {
    const std::string& why = provisioner.status().message();
    const std::string number = text.substr(0, text.find_first_not_of("+-.0123456789"));
    const bool no_digit = number.find_first_of("0123456789") == std::string::npos;  // "." or "E3" is zero to Kubernetes
    Require(!fits || bytes < 0 || bytes == INT64_MAX || no_digit || why.find("decimal places") != std::string::npos ||
                why.find("significant digits") != std::string::npos,
            "QuantityToBytes refuses a quantity that fits", text, why);
  }
  Require(fits == QuantityBytes(*again, &bytes_again) && bytes == bytes_again,
          "the canonical form has another byte count", text, canonical);
  return 0;
}
