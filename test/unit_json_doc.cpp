// Tests for json_doc.hpp: what JsonDoc reads and how JsonRef finds and decodes values (the
// error messages for bad text are tested through ParseJson in unit_k8s_json.cpp); and for
// json_write.hpp, which must write what picojson writes.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "json_doc.hpp"
#include "json_write.hpp"
#include "k8s_json.hpp"

namespace {

// A random JSON value as picojson builds it: nesting, every type, and strings with escapes,
// control characters and multi-byte UTF-8.
picojson::value RandomValue(std::mt19937& rng, int depth) {
  std::uniform_int_distribution<int> kind(0, depth > 4 ? 4 : 6);
  static const char* const kPieces[] = {"a", "Z", "\"", "\\", "/", "\n", "\t", "\x01", "\x1f", " ",
                                        "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9d\x84\x9e", "{", "]", ":"};
  switch (kind(rng)) {
    case 0: return picojson::value();
    case 1: return picojson::value(rng() % 2 == 0);
    case 2: {
      std::uniform_real_distribution<double> d(-1e6, 1e6);
      return picojson::value(rng() % 3 == 0 ? static_cast<double>(static_cast<int>(d(rng))) : d(rng));
    }
    case 3:
    case 4: {
      std::string s;
      for (int n = static_cast<int>(rng() % 12); n > 0; --n) s += kPieces[rng() % (sizeof kPieces / sizeof *kPieces)];
      return picojson::value(s);
    }
    case 5: {
      picojson::array a;
      for (int n = static_cast<int>(rng() % 5); n > 0; --n) a.push_back(RandomValue(rng, depth + 1));
      return picojson::value(a);
    }
    default: {
      picojson::object o;
      for (int n = static_cast<int>(rng() % 5); n > 0; --n) o[RandomValue(rng, 5).to_str()] = RandomValue(rng, depth + 1);
      return picojson::value(o);
    }
  }
}

}  // namespace

TEST_CASE("JsonDoc: reads back every value picojson writes", "[json_doc]") {
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) {
    const picojson::value want = RandomValue(rng, 0);
    const std::string text = want.serialize(i % 2 == 0);  // compact and indented
    INFO(text);
    JsonDoc doc;
    REQUIRE(doc.Read(text).ok());
    const picojson::value got = k8s_json_detail::ToPicojson(doc.root());
    CHECK(got == want);
    CHECK(got.serialize() == want.serialize());
    CHECK(doc.root().Text() == text.substr(0, text.find_last_not_of('\n') + 1));
  }
}

TEST_CASE("ToJson: writes every value as picojson's compact serialize() does", "[json_write]") {
  std::mt19937 rng(11);
  for (int i = 0; i < 3000; ++i) {
    const picojson::value v = RandomValue(rng, 0);
    CHECK(ToJson(v) == v.serialize());
  }
}

TEST_CASE("ToJson: every byte, alone and between plain characters, escaped as picojson does", "[json_write]") {
  for (int b = 0; b < 256; ++b) {
    const std::string c(1, static_cast<char>(b));
    for (const std::string& s : {c, "ab" + c, c + "cd", "ab" + c + "cd" + c + c + "ef"}) {
      const picojson::value v(s);
      INFO("byte " << b);
      CHECK(ToJson(v) == v.serialize());
      picojson::object o;
      o[s] = v;
      CHECK(ToJson(picojson::value(o)) == picojson::value(o).serialize());
    }
  }
  CHECK(ToJson(picojson::value(std::string("a/b\"c\x7f"))) == R"("a\/b\"c\u007f")");
}

TEST_CASE("JsonObjectWriter: writes what ToJson writes for the same picojson object", "[json_write]") {
  std::mt19937 rng(7);
  auto random_string = [&] {
    std::string s(rng() % 12, ' ');
    for (char& c : s) c = "ab/\\\"\n\x01\x7f z\xc3\xa9"[rng() % 12];
    return s;
  };
  for (int i = 0; i < 500; ++i) {
    std::map<std::string, std::string> strings, nested;
    std::vector<std::string> list;
    for (size_t n = rng() % 5; n > 0; --n) strings[random_string()] = random_string();
    for (size_t n = rng() % 4; n > 0; --n) nested[random_string()] = random_string();
    for (size_t n = rng() % 4; n > 0; --n) list.push_back(random_string());
    const long long count = static_cast<long long>(rng() % 100000) - 50000;

    std::string got;
    JsonObjectWriter w(&got);
    w.Integer("\x01count", count);  // the keys, in order: control character, digits, letters
    w.Strings("0list", list);
    w.StringMap("1nested", nested);
    for (const auto& [k, v] : strings) {
      if (k < "2") continue;  // after the members above
      w.String(k, v);
    }
    w.End();

    picojson::object want;
    want["\x01count"] = picojson::value(static_cast<double>(count));
    picojson::array items;
    for (const auto& s : list) items.emplace_back(s);
    want["0list"] = picojson::value(items);
    picojson::object inner;
    for (const auto& [k, v] : nested) inner[k] = picojson::value(v);
    want["1nested"] = picojson::value(inner);
    for (const auto& [k, v] : strings)
      if (k >= "2") want[k] = picojson::value(v);
    INFO(got);
    CHECK(got == ToJson(picojson::value(want)));
  }
  std::string empty;
  JsonObjectWriter(&empty).End();
  CHECK(empty == "{}");
}

TEST_CASE("JsonRef: members, items, scalars and their text", "[json_doc]") {
  const std::string text =
      R"( {"a": 1, "b": "x\"y", "c": [true, false, null, -2.5e1], "d": {"e": {}}, "a": 2,)"
      R"( "k\u00e9y": "\ud834\udd1e\u00e9\/\n", "n": null} )";
  JsonDoc doc;
  REQUIRE(doc.Read(text).ok());
  const JsonRef top = doc.root();
  CHECK(top.is(JsonType::kObject));
  CHECK(top.Get("a").Number() == 2);  // a repeated key: the last one, as Go's decoder reads it
  CHECK(top.Get("b").String() == "x\"y");
  CHECK(top.Get("b").Text() == R"("x\"y")");
  CHECK(top.Get("kéy").String() == "\xf0\x9d\x84\x9e\xc3\xa9/\n");  // an escaped key is found by its text
  CHECK(top.Get("d").Get("e").is(JsonType::kObject));
  CHECK(top.Get("d").Get("e").Text() == "{}");
  CHECK(top.Get("n").unset());
  CHECK_FALSE(top.Get("n").absent());
  CHECK(top.Get("missing").absent());
  CHECK(top.Get("missing").Get("deeper").absent());
  CHECK(top.Get("b").Get("x").absent());  // not an object
  CHECK(top.Get("missing").String().empty());
  CHECK(top.Get("b").Number() == 0);

  std::vector<std::string> keys;
  top.ForEachMember([&](const std::string& key, JsonRef) { keys.push_back(key); });
  CHECK(keys == std::vector<std::string>{"a", "b", "c", "d", "a", "kéy", "n"});

  std::vector<std::string> items;
  top.Get("c").ForEachItem([&](size_t i, JsonRef v) {
    CHECK(i == items.size());
    items.push_back(std::string(v.Text()));
  });
  CHECK(items == std::vector<std::string>{"true", "false", "null", "-2.5e1"});
  bool seen = false;
  top.ForEachItem([&](size_t, JsonRef) { seen = true; });  // an object has no items
  top.Get("c").ForEachMember([&](const std::string&, JsonRef) { seen = true; });
  CHECK_FALSE(seen);

  JsonRef first;
  top.Get("c").ForEachItem([&](size_t i, JsonRef v) {
    if (i == 0) first = v;
  });
  CHECK(first.Bool());
  CHECK(first.is(JsonType::kBool));
  CHECK(std::string(JsonTypeName(top.Get("c").type())) == "array");
}

TEST_CASE("JsonDoc: strings keep NUL and every escape", "[json_doc]") {
  const std::string text = R"(["a\u0000b", "\b\f\n\r\t\"\\\/", "\u20AC\u00e9", "plain"])";
  JsonDoc doc;
  REQUIRE(doc.Read(text).ok());
  std::vector<std::string> got;
  doc.root().ForEachItem([&](size_t, JsonRef v) { got.push_back(v.String()); });
  CHECK(got == std::vector<std::string>{std::string("a\0b", 3), "\b\f\n\r\t\"\\/", "\xe2\x82\xac\xc3\xa9", "plain"});
}

TEST_CASE("JsonDoc: a string's special bytes are found at every offset of a long run", "[json_doc]") {
  // Runs are scanned sixteen bytes at a time: put each kind of byte that ends a run at every
  // place of the first three blocks, in strings of every length around them.
  const std::string plain = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVW";
  struct Special {
    std::string raw, decoded;
    bool valid;
  };
  const Special specials[] = {{"\\\"", "\"", true},    {"\\\\", "\\", true}, {"\\n", "\n", true},
                              {"\xc3\xa9", "\xc3\xa9", true}, {"\x01", "", false},    {"\x7f", "\x7f", true},
                              {"\xff", "", false},        {"\x1f", "", false}};
  for (const Special& sp : specials) {
    for (size_t at = 0; at <= 48; ++at) {
      for (size_t after : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{17}}) {
        const std::string text = "\"" + plain.substr(0, at) + sp.raw + plain.substr(0, after) + "\"";
        INFO("special " << sp.raw << " at " << at << ", " << after << " after");
        JsonDoc doc;
        const bool ok = doc.Read(text).ok();
        CHECK(ok == sp.valid);
        if (ok) CHECK(doc.root().String() == plain.substr(0, at) + sp.decoded + plain.substr(0, after));
      }
    }
  }
  for (size_t n = 0; n <= 48; ++n) {  // and no special byte at all
    const std::string text = "\"" + plain.substr(0, n) + "\"";  // a document reads its text in place
    JsonDoc doc;
    REQUIRE(doc.Read(text).ok());
    CHECK(doc.root().String() == plain.substr(0, n));
    CHECK_FALSE(doc.Read(std::string_view(text).substr(0, text.size() - 1)).ok());  // unterminated
  }
}

TEST_CASE("JsonDoc: a failed read leaves nothing, and a document can be read again", "[json_doc]") {
  JsonDoc doc;
  const std::string good = R"({"a":[1,2,3]})";
  const std::string bad = R"({"a":[1,2,)";
  REQUIRE(doc.Read(good).ok());
  CHECK(doc.root().Get("a").Text() == "[1,2,3]");
  CHECK_FALSE(doc.Read(bad).ok());
  CHECK(doc.root().absent());
  const std::string other = R"({"b":"c"})";
  REQUIRE(doc.Read(other).ok());
  CHECK(doc.root().Get("a").absent());
  CHECK(doc.root().Get("b").String() == "c");

  std::string big = "[";  // more nodes than a document keeps between reads
  for (int i = 0; i < 10000; ++i) big += "0,";
  big += "0]";
  REQUIRE(doc.Read(big).ok());
  size_t n = 0;
  doc.root().ForEachItem([&](size_t, JsonRef) { ++n; });
  CHECK(n == 10001);
  REQUIRE(doc.Read(other).ok());
  CHECK(doc.root().Get("b").String() == "c");
}
