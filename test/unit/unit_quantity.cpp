// Tests for the fake API server's exact quantities (test/fake/fake_quantity.hpp), and the
// provisioner's QuantityToBytes (quantity.hpp) against them. The tables come from Kubernetes'
// own quantity_test.go (staging/src/k8s.io/apimachinery/pkg/api/resource): TestQuantityParse,
// TestQuantityString, TestQuantityParseEmit and their invalid inputs.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "base/quantity.hpp"
#include "test/fake/fake_quantity.hpp"

namespace {

using F = QuantityFormat;

const char* FormatName(F f) {
  switch (f) {
    case F::kDecimalSI: return "DecimalSI";
    case F::kBinarySI: return "BinarySI";
    case F::kDecimalExponent: return "DecimalExponent";
  }
  return "?";
}

// The value mantissa * 10^exponent in the normalized form ParseQuantity gives.
Quantity Expected(int64_t mantissa, int exponent, F format) {
  Quantity q;
  q.negative = mantissa < 0;
  uint64_t m = mantissa < 0 ? 0 - static_cast<uint64_t>(mantissa) : static_cast<uint64_t>(mantissa);
  q.digits = std::to_string(m);
  q.exponent = exponent;
  q.format = format;
  quantity_detail::Normalize(&q);
  return q;
}

std::string Describe(const Quantity& q) {
  return std::string(q.negative ? "-" : "") + q.digits + "e" + std::to_string(q.exponent) + " " + FormatName(q.format);
}

struct ParseCase {
  const char* input;
  int64_t mantissa;
  int exponent;
  F format;
};

// TestQuantityParse's table: input -> decQuantity(mantissa, exponent, format).
const ParseCase kParseCases[] = {
    {"0", 0, 0, F::kDecimalSI},
    {"0n", 0, 0, F::kDecimalSI},
    {"0u", 0, 0, F::kDecimalSI},
    {"0m", 0, 0, F::kDecimalSI},
    {"0Ki", 0, 0, F::kBinarySI},
    {"0k", 0, 0, F::kDecimalSI},
    {"0Mi", 0, 0, F::kBinarySI},
    {"0M", 0, 0, F::kDecimalSI},
    {"0Gi", 0, 0, F::kBinarySI},
    {"0G", 0, 0, F::kDecimalSI},
    {"0Ti", 0, 0, F::kBinarySI},
    {"0T", 0, 0, F::kDecimalSI},
    // Quantity less numbers are allowed
    {"1", 1, 0, F::kDecimalSI},
    // Binary suffixes
    {"1Ki", 1024, 0, F::kBinarySI},
    {"8Ki", 8 * 1024, 0, F::kBinarySI},
    {"7Mi", 7 * 1024 * 1024, 0, F::kBinarySI},
    {"6Gi", 6LL * 1024 * 1024 * 1024, 0, F::kBinarySI},
    {"5Ti", 5LL * 1024 * 1024 * 1024 * 1024, 0, F::kBinarySI},
    {"4Pi", 4LL * 1024 * 1024 * 1024 * 1024 * 1024, 0, F::kBinarySI},
    {"3Ei", 3LL * 1024 * 1024 * 1024 * 1024 * 1024 * 1024, 0, F::kBinarySI},
    {"10Ti", 10LL * 1024 * 1024 * 1024 * 1024, 0, F::kBinarySI},
    {"100Ti", 100LL * 1024 * 1024 * 1024 * 1024, 0, F::kBinarySI},
    // Decimal suffixes
    {"5n", 5, -9, F::kDecimalSI},
    {"4u", 4, -6, F::kDecimalSI},
    {"3m", 3, -3, F::kDecimalSI},
    {"9", 9, 0, F::kDecimalSI},
    {"8k", 8, 3, F::kDecimalSI},
    {"50k", 5, 4, F::kDecimalSI},
    {"7M", 7, 6, F::kDecimalSI},
    {"6G", 6, 9, F::kDecimalSI},
    {"5T", 5, 12, F::kDecimalSI},
    {"40T", 4, 13, F::kDecimalSI},
    {"300T", 3, 14, F::kDecimalSI},
    {"2P", 2, 15, F::kDecimalSI},
    {"1E", 1, 18, F::kDecimalSI},
    // Decimal exponents
    {"1E-3", 1, -3, F::kDecimalExponent},
    {"1e3", 1, 3, F::kDecimalExponent},
    {"1E6", 1, 6, F::kDecimalExponent},
    {"1e9", 1, 9, F::kDecimalExponent},
    {"1E12", 1, 12, F::kDecimalExponent},
    {"1e15", 1, 15, F::kDecimalExponent},
    {"1E18", 1, 18, F::kDecimalExponent},
    // Nonstandard but still parsable
    {"1e14", 1, 14, F::kDecimalExponent},
    {"1e13", 1, 13, F::kDecimalExponent},
    {"100.035k", 100035, 0, F::kDecimalSI},
    // Things that look like floating point
    {"0.001", 1, -3, F::kDecimalSI},
    {"0.0005k", 5, -1, F::kDecimalSI},
    {"0.005", 5, -3, F::kDecimalSI},
    {"0.05", 5, -2, F::kDecimalSI},
    {"0.5", 5, -1, F::kDecimalSI},
    {"0.00050k", 5, -1, F::kDecimalSI},
    {"0.00500", 5, -3, F::kDecimalSI},
    {"0.05000", 5, -2, F::kDecimalSI},
    {"0.50000", 5, -1, F::kDecimalSI},
    {"0.5e0", 5, -1, F::kDecimalExponent},
    {"0.5e-1", 5, -2, F::kDecimalExponent},
    {"0.5e-2", 5, -3, F::kDecimalExponent},
    {"10.035M", 10035, 3, F::kDecimalSI},
    {"1.2e3", 12, 2, F::kDecimalExponent},
    {"1.3E+6", 13, 5, F::kDecimalExponent},
    {"1.40e9", 14, 8, F::kDecimalExponent},
    {"1.53E12", 153, 10, F::kDecimalExponent},
    {"1.6e15", 16, 14, F::kDecimalExponent},
    {"1.7E18", 17, 17, F::kDecimalExponent},
    {"9.01", 901, -2, F::kDecimalSI},
    {"8.1k", 81, 2, F::kDecimalSI},
    {"7.123456M", 7123456, 0, F::kDecimalSI},
    {"6.987654321G", 6987654321, 0, F::kDecimalSI},
    {"5.444T", 5444, 9, F::kDecimalSI},
    {"40.1T", 401, 11, F::kDecimalSI},
    {"300.2T", 3002, 11, F::kDecimalSI},
    {"2.5P", 25, 14, F::kDecimalSI},
    {"1.01E", 101, 16, F::kDecimalSI},
    // Things that saturate/round
    {"3.001n", 4, -9, F::kDecimalSI},
    {"1.1E-9", 2, -9, F::kDecimalExponent},
    {"0.0000000001", 1, -9, F::kDecimalSI},
    {"0.0000000005", 1, -9, F::kDecimalSI},
    {"0.00000000050", 1, -9, F::kDecimalSI},
    {"0.5e-9", 1, -9, F::kDecimalExponent},
    {"0.9n", 1, -9, F::kDecimalSI},
    {"0.00000012345", 124, -9, F::kDecimalSI},
    {"0.00000012354", 124, -9, F::kDecimalSI},
    {"9Ei", INT64_MAX, 0, F::kBinarySI},
    {"9223372036854775807Ki", INT64_MAX, 0, F::kBinarySI},
    {"12E", 12, 18, F::kDecimalSI},
    // We'll accept fractional binary stuff, too.
    {"100.035Ki", 10243584, -2, F::kBinarySI},
    {"0.5Mi", 512 * 1024, 0, F::kBinarySI},
    {"0.05Gi", 536870912, -1, F::kBinarySI},
    {"0.025Ti", 274877906944, -1, F::kBinarySI},
    // Things written by trolls
    {"0.000000000001Ki", 2, -9, F::kDecimalSI},  // rounds up, changes format
    {".001", 1, -3, F::kDecimalSI},
    {".0001k", 100, -3, F::kDecimalSI},
    {"1.", 1, 0, F::kDecimalSI},
    {"1.G", 1, 9, F::kDecimalSI},
};

void CheckParse(const std::string& input, const Quantity& want) {
  INFO("input " << input);
  Result<Quantity> got = ParseQuantity(input);
  REQUIRE(got.ok());
  CHECK(Describe(*got) == Describe(want));
}

}  // namespace

TEST_CASE("ParseQuantity: Kubernetes' parse table, as written, negated and with a plus", "[quantity]") {
  for (const auto& c : kParseCases) {
    Quantity want = Expected(c.mantissa, c.exponent, c.format);
    CheckParse(c.input, want);
    CheckParse(std::string("+") + c.input, want);
    if (c.mantissa != 0) want.negative = true;
    CheckParse(std::string("-") + c.input, want);
  }
}

TEST_CASE("ParseQuantity: Kubernetes' invalid inputs and ours are rejected", "[quantity]") {
  const char* kInvalid[] = {
      // From quantity_test.go.
      "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", "1e4294967297", " 1", "1 ",
      // Empty, bad suffixes and shapes.
      "", "10Xi", "1ki", "1K", "1e", "1e+", "1Ki1", "1m3", "--1", "+-1", "1-", "0x10", "1,5", "1_000", "1.5.5",
      "1\n", "Non-Numeric", "\xd9\xa1",
      // Exponents beyond int32 (Kubernetes keeps them in an int32).
      "1e2147483648", "1E-2147483648", "1e9223372036854775808",
      // A number with no digit where Kubernetes' decimal parser needs one.
      ".e-10",
      // Deliberate differences: no exact canonical form in Kubernetes (it would print "1").
      "1000E", "1000000E", "100000000000000000000000", "10e2147483647",
  };
  for (const char* text : kInvalid) {
    INFO("input \"" << text << "\"");
    Result<Quantity> q = ParseQuantity(text);
    CHECK_FALSE(q.ok());
    if (!q.ok()) CHECK(q.status().code() == Status::kInvalid);
  }
  std::string with_nul("1Gi\0", 4);
  CHECK_FALSE(ParseQuantity(with_nul).ok());
}

TEST_CASE("CanonicalQuantity: Kubernetes' TestQuantityString table", "[quantity]") {
  struct Case {
    const char* expect;
    const char* alternate;  // another spelling that must print as `expect`; "" if none
  };
  const Case kCases[] = {
      {"1Gi", "1024Mi"},  {"300Mi", "307200Ki"}, {"6Ki", ""},      {"1001Gi", "1025024Mi"}, {"1Ti", "1024Gi"},
      {"5", "5000m"},     {"500m", "0.5"},       {"1G", "1000M"},  {"1G", "0.001T"},        {"1m", "1000u"},
      {"80m", ""},        {"1080m", "1.08"},     {"1080m", "1080000000n"},                  {"300M", ""},
      {"1T", ""},         {"1E", ""},            {"1e21", ""},     {"5e21", ""},            {"1e24", ""},
      {"10e69", ""},      {"20e69", ""},         {"1e72", ""},     {"1234567M", ""},        {"1234567m", ""},
      {"3k", ""},         {"1025", ""},          {"0", "00"},      {"1e9", ".001e12"},      {"1e-3", "0.001e0"},
      {"1e-9", "1000e-12"}, {"80e-3", ""},       {"300e6", ""},    {"1e12", ""},            {"1e3", ""},
      {"3e3", ""},        {"1n", ""},            {"80n", ""},      {"1080n", ""},           {"1u", ""},
      {"80u", ""},        {"1080u", ""},
  };
  for (const auto& c : kCases) {
    INFO("expect " << c.expect << ", alternate " << c.alternate);
    Result<Quantity> q = ParseQuantity(c.expect);
    REQUIRE(q.ok());
    CHECK(q->verbatim == c.expect);  // Kubernetes keeps a canonical text as its string form
    CHECK(CanonicalQuantity(*q) == c.expect);
    if (std::string(c.expect) != "0") {
      Result<Quantity> neg = ParseQuantity(std::string("-") + c.expect);
      REQUIRE(neg.ok());
      CHECK(CanonicalQuantity(*neg) == std::string("-") + c.expect);
    }
    if (*c.alternate == '\0') continue;
    Result<Quantity> alt = ParseQuantity(c.alternate);
    REQUIRE(alt.ok());
    CHECK(alt->verbatim.empty());
    CHECK(CanonicalQuantity(*alt) == c.expect);
    if (std::string(c.expect) != "0") {
      Result<Quantity> neg = ParseQuantity(std::string("-") + c.alternate);
      REQUIRE(neg.ok());
      CHECK(CanonicalQuantity(*neg) == std::string("-") + c.expect);
    }
  }
}

TEST_CASE("CanonicalQuantity: Kubernetes' TestQuantityParseEmit table, and negated", "[quantity]") {
  struct Case {
    const char* in;
    const char* expect;
  };
  const Case kCases[] = {
      {"1Ki", "1Ki"},         {"1Mi", "1Mi"},           {"1Gi", "1Gi"},
      {"1024Mi", "1Gi"},      {"1000M", "1G"},          {".001Ki", "1024m"},
      {".000001Ki", "1024u"}, {".000000001Ki", "1024n"}, {".000000000001Ki", "2n"},
  };
  for (const auto& c : kCases) {
    INFO("input " << c.in);
    Result<Quantity> q = ParseQuantity(c.in);
    REQUIRE(q.ok());
    CHECK(CanonicalQuantity(*q) == c.expect);
    Result<Quantity> neg = ParseQuantity(std::string("-") + c.in);
    REQUIRE(neg.ok());
    CHECK(CanonicalQuantity(*neg) == std::string("-") + c.expect);
  }
}

TEST_CASE("CanonicalQuantity: sizes a claim may ask for, and Kubernetes' quirks", "[quantity]") {
  struct Case {
    const char* name;
    const char* in;
    const char* expect;
  };
  const Case kCases[] = {
      {"fractional Gi", "1.5Gi", "1536Mi"},
      {"half a Gi", "0.5Gi", "512Mi"},
      {"exponent kept", "2e9", "2e9"},
      {"exponent to multiple of 3", "1e4", "10e3"},
      {"decimal collapses", "1000M", "1G"},
      {"kilo kept", "100k", "100k"},
      {"fraction to milli", "1.5", "1500m"},
      {"binary below 1024 prints decimal", "0.5Ki", "512"},
      {"binary not a multiple of 1024", "1.5Ki", "1536"},
      {"binary with a fraction prints decimal", "1.0001Ki", "1024102400u"},
      {"binary cap", "9Ei", "9223372036854775807"},
      {"binary cap with a fraction just under 2^63", "7.99999999999999999999Ei", "9223372036854775807"},
      {"huge exponent", "1e30", "1e30"},
      {"largest exponent", "1e2147483647", "10e2147483646"},
      {"tiny exponent rounds to 1n", "1e-2147483647", "1e-9"},
      {"long digits", "123456789012345678901234567890", "123456789012345678901234567890"},
      {"long fraction rounds up", "0.1234567890123456789", "123456790n"},
      // Kubernetes' parser keeps these texts verbatim as their string form.
      {"plus sign kept", "+1", "+1"},
      {"capital exponent kept", "1E3", "1E3"},
      {"trailing dot kept", "5.", "5."},
      {"leading zero kept", "01", "01"},
      {"fraction at scale 0 kept", "1.500k", "1.500k"},
      {"plus binary kept", "+5Gi", "+5Gi"},
      // ... and these parse as zero.
      {"lone plus", "+", "0"},
      {"lone minus", "-", "0"},
      {"lone dot", ".", "0"},
      {"lone suffix", "Ki", "0"},
      {"negative zero", "-0", "0"},
      {"negative zero binary", "-0Gi", "0"},
  };
  for (const auto& c : kCases) {
    INFO(c.name << ": " << c.in);
    Result<Quantity> q = ParseQuantity(c.in);
    REQUIRE(q.ok());
    CHECK(CanonicalQuantity(*q) == c.expect);
  }
}

TEST_CASE("CanonicalQuantity: reparsing the canonical form gives the same value", "[quantity]") {
  for (const auto& c : kParseCases) {
    for (const std::string& in : {std::string(c.input), std::string("-") + c.input}) {
      INFO("input " << in);
      Result<Quantity> q = ParseQuantity(in);
      REQUIRE(q.ok());
      Result<Quantity> again = ParseQuantity(CanonicalQuantity(*q));
      REQUIRE(again.ok());
      CHECK(again->negative == q->negative);
      CHECK(again->digits == q->digits);
      CHECK(again->exponent == q->exponent);
    }
  }
}

TEST_CASE("QuantityBytes: rounds away from zero and refuses what int64 cannot hold", "[quantity]") {
  struct Case {
    const char* in;
    bool fits;
    int64_t bytes;
  };
  const Case kCases[] = {
      {"0", true, 0},
      {"1Gi", true, 1073741824},
      {"1.5Gi", true, 1610612736},
      {"100k", true, 100000},
      {"2e9", true, 2000000000},
      {"0.5", true, 1},
      {"1m", true, 1},
      {"1n", true, 1},
      {"1.000000001", true, 2},
      {"-1.5", true, -2},
      {"9Ei", true, INT64_MAX},
      {"-9Ei", true, -INT64_MAX},
      {"7.9999999999999999Ei", true, 9223372036854775693LL},
      {"9223372036854775807", true, INT64_MAX},
      {"-9223372036854775808", true, INT64_MIN},
      {"9223372036854775806.5", true, INT64_MAX},
      {"1E", true, 1000000000000000000LL},
      {"9223372036854775808", false, 0},
      {"9223372036854775807.5", false, 0},
      {"-9223372036854775809", false, 0},
      {"10E", false, 0},
      {"1e19", false, 0},
      {"1e30", false, 0},
      {"1e2147483647", false, 0},
  };
  for (const auto& c : kCases) {
    INFO("input " << c.in);
    Result<Quantity> q = ParseQuantity(c.in);
    REQUIRE(q.ok());
    int64_t bytes = 42;
    CHECK(QuantityBytes(*q, &bytes) == c.fits);
    CHECK(bytes == (c.fits ? c.bytes : 42));
  }
}

TEST_CASE("IsNegative", "[quantity]") {
  struct Case {
    const char* in;
    bool negative;
  };
  const Case kCases[] = {{"1Gi", false}, {"-1Gi", true}, {"-0", false}, {"-0.0000000000001", true}, {"0", false}};
  for (const auto& c : kCases) {
    INFO("input " << c.in);
    Result<Quantity> q = ParseQuantity(c.in);
    REQUIRE(q.ok());
    CHECK(IsNegative(*q) == c.negative);
  }
}

TEST_CASE("QuantityToBytes: the bytes Kubernetes' Value() gives, or a clear refusal", "[quantity]") {
  std::vector<std::string> inputs = {"1Gi", "1.5Gi", "0.5", "1n", "1.000000001", "9Ei", "7.9999999999999999Ei",
                                     "9223372036854775807", "9223372036854775806.5", "1E", "10E", "1e19", "1e-9",
                                     "100m", "0.1Ki", "123456789.123456789M", "00012.500k", "2e9", "1E3", "0", "-0"};
  for (const auto& c : kParseCases) inputs.push_back(c.input);
  for (const std::string& text : inputs) {
    INFO("input \"" << text << "\"");
    Result<Quantity> exact = ParseQuantity(text);
    REQUIRE(exact.ok());
    int64_t want = 0;
    bool fits = QuantityBytes(*exact, &want);
    Result<int64_t> got = QuantityToBytes(text);
    if (fits && want == INT64_MAX && !got.ok()) {  // Kubernetes caps BinarySI values ("9Ei") there
      CHECK_THAT(got.status().message(), Catch::Contains("too large"));
    } else if (fits && want >= 0) {
      REQUIRE(got.ok());
      CHECK(*got == want);
    } else {
      REQUIRE_FALSE(got.ok());
      CHECK_THAT(got.status().message(), Catch::Contains(fits ? "negative" : "too large"));
    }
  }
  const char* kRefused[] = {"", "aoeu", "1.1.M", "10Xi", "1ki", "1K", "1e", " 1", "1 ", "-1Gi", "1e-19",
                            "0.0000000000000000001", "123456789012345678901234567890123456789", "1e99999999999"};
  for (const char* text : kRefused) {
    INFO("input \"" << text << "\"");
    Result<int64_t> got = QuantityToBytes(text);
    CHECK_FALSE(got.ok());
    if (!got.ok()) CHECK(got.status().message().find(std::string("\"") + text + "\"") != std::string::npos);
  }
}

TEST_CASE("DurationSeconds: Go durations in whole seconds, or a clear refusal", "[quantity][duration]") {
  struct Row {
    const char* text;
    int64_t seconds;
  } rows[] = {{"0", 0},           {"0s", 0},          {"90s", 90},     {"2s", 2},
              {"1m", 60},         {"1h30m", 5400},    {"168h", 604800}, {"1h0m1s", 3601},
              {"30m30m", 3600},   {"876000h", 876000LL * 3600}};
  for (const Row& r : rows) {
    INFO("input \"" << r.text << "\"");
    Result<int64_t> got = DurationSeconds(r.text);
    REQUIRE(got.ok());
    CHECK(*got == r.seconds);
  }
  struct Bad {
    const char* text;
    const char* says;
  } bad[] = {{"", "empty"},
             {"7d", "unit \"d\" is not h, m or s"},
             {"10", "a unit (h, m or s) must follow 10"},
             {"h", "a number must come before each unit"},
             {"-1h", "a number must come before each unit"},
             {"+1h", "a number must come before each unit"},
             {"1.5h", "unit \".\" is not h, m or s"},
             {"500ms", "units smaller than a second"},
             {"1h ", "a number must come before each unit"},
             {"900000h", "more than 100 years"},
             {"99999999999999999999s", "more than 100 years"}};
  for (const Bad& b : bad) {
    INFO("input \"" << b.text << "\"");
    Result<int64_t> got = DurationSeconds(b.text);
    REQUIRE_FALSE(got.ok());
    CHECK_THAT(got.status().message(), Catch::Contains(std::string("\"") + b.text + "\" is not a duration"));
    CHECK_THAT(got.status().message(), Catch::Contains(b.says));
  }
}
