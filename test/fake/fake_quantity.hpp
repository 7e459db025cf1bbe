// Kubernetes resource quantities ("1Gi", "500M", "1.5", "2e9") parsed and printed exactly as
// apimachinery's resource.Quantity does (ParseQuantity, String, Value). Pure, std only, no
// floating point: the value is kept as a decimal digit string and a power-of-ten exponent.
//
// Deliberate differences from Kubernetes (each rejected by ParseQuantity, never mis-printed):
//  - a DecimalSI value whose canonical form needs a suffix above "E" (10^18), e.g. "1000E":
//    Kubernetes' String() drops the magnitude there and prints "1";
//  - a value whose decimal exponent, after moving trailing zeros into it, exceeds 2^31-1
//    (Kubernetes' int32 exponent would wrap).
// Exponents after "e"/"E" must lie in [-(2^31-1), 2^31-1], as in current Kubernetes.
#pragma once
#include <cstdint>
#include <string>

#include "base/status.hpp"

enum class QuantityFormat { kDecimalSI, kBinarySI, kDecimalExponent };

// value = (negative ? -1 : 1) * digits * 10^exponent, exactly.
struct Quantity {
  bool negative = false;      // never true for zero
  std::string digits = "0";   // significant digits: no leading or trailing zeros; "0" for zero
  int64_t exponent = 0;       // 0 for zero
  QuantityFormat format = QuantityFormat::kDecimalSI;
  // The parsed text when Kubernetes keeps it as the quantity's string form (its parser does
  // so for text it considers canonical, e.g. "100k", "1Ki", but also "+1", "1E3", "5.").
  std::string verbatim;
};

namespace quantity_detail {

constexpr int64_t kMaxExponent = 2147483647;  // Kubernetes keeps exponents in an int32
constexpr uint64_t kMaxInt64 = 9223372036854775807ULL;

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The pieces of a quantity's text, as apimachinery's parseQuantityString splits it:
// sign, numerator digits (leading zeros stripped, "0" if none), fraction digits, suffix.
struct Pieces {
  bool positive = true;
  std::string value;  // the signed number as written, without the suffix
  std::string num;
  std::string denom;
  std::string suffix;
};

// Returns false when the text does not have the shape <sign?><digits.digits><suffix>.
bool SplitText(const std::string& s, Pieces* p);

struct Suffix {
  int base = 10;         // 10 or 2
  int64_t exponent = 0;  // power of the base
  QuantityFormat format = QuantityFormat::kDecimalSI;
};

// Parses the signed decimal exponent after "e"/"E"; false if malformed or beyond int32.
bool ParseExponent(const std::string& s, int64_t* out);

// Interprets a suffix as apimachinery's quantitySuffixer does; false if unknown.
bool InterpretSuffix(const std::string& s, Suffix* out);

// digits *= m, for a decimal digit string and a small multiplier.
void MultiplySmall(std::string* digits, unsigned m);

// digits += 1.
void Increment(std::string* digits);

// Strips leading zeros and moves trailing zeros into the exponent; zero becomes "0" x 10^0.
void Normalize(Quantity* q);

inline bool IsZero(const Quantity& q) { return q.digits == "0"; }

// The magnitude as an integer if it is one and below 10^19; false otherwise.
bool IntegerMagnitude(const Quantity& q, uint64_t* out);

// Rounds a non-zero value away from zero to a multiple of 10^-9 (Kubernetes' smallest unit).
void RoundUpToNano(Quantity* q);

// Caps the magnitude of a BinarySI value at 2^63-1, as Kubernetes does.
void CapBinary(Quantity* q);

// Which of Kubernetes' two parse paths a text takes (see ParseQuantity in apimachinery's
// quantity.go): the int64 fast path, and whether that path keeps the text verbatim as the
// string form (its "already canonical" test). Both paths give the same value.
struct Path {
  bool fast = false;
  bool verbatim = false;
};

Path ChoosePath(const Pieces& p, const Suffix& sfx);

// The DecimalSI suffix for a power of ten, or nullptr if there is none.
const char* DecimalSuffix(int64_t exponent);

// digits and exponent with the exponent lowered to a multiple of 3 (Kubernetes' canonical form).
void ToMultipleOf3(const Quantity& q, std::string* digits, int64_t* exponent);

}  // namespace quantity_detail

// Parses a quantity as Kubernetes' resource.ParseQuantity does: optional sign, digits with an
// optional fraction, then a suffix (n u m "" k M G T P E, Ki Mi Gi Ti Pi Ei, or e/E<int>).
// Like Kubernetes: non-zero values are rounded away from zero to 1n; BinarySI magnitudes are
// capped at 2^63-1; a BinarySI value strictly between -1 and 1 becomes DecimalSI; "-", "+"
// and "." parse as zero; negative values are valid (callers check IsNegative).
// Errors (kInvalid, naming the text): empty text, spaces, a bad shape ("1.1.M", "aoeu"), an
// unknown suffix ("10Xi", "1i"), an exponent beyond int32, and the two deliberate
// differences listed at the top of this file.
Result<Quantity> ParseQuantity(const std::string& text);

// The string Kubernetes' Quantity.String() gives for a parsed quantity: the verbatim text when
// Kubernetes keeps it, else the canonical form: no fraction, the largest suffix of the
// quantity's format that keeps the value exact ("1.5Gi" -> "1536Mi", "1000M" -> "1G",
// "0.5" -> "500m", "1e4" -> "10e3"); BinarySI values below 1024 in magnitude or with a
// fraction print as DecimalSI; zero prints "0". A DecimalSI value beyond the suffixes (only
// from a hand-built Quantity) prints with an exponent.
std::string CanonicalQuantity(const Quantity& q);

// The value rounded to an integer away from zero (Kubernetes' Quantity.Value()), e.g. bytes
// for a storage size. Returns false, leaving *bytes unchanged, if it does not fit in int64.
bool QuantityBytes(const Quantity& q, int64_t* bytes);

// True if the quantity is below zero.
inline bool IsNegative(const Quantity& q) { return q.negative; }
