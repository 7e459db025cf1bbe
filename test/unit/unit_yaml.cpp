// Tests for yaml.hpp: tables of accepted inputs (compared with the JSON they must equal),
// rejected inputs (with the error they must give), and whole files like this project's.
#include "base/yaml.hpp"

#include <catch2/catch.hpp>

namespace {

// The documents as one JSON array, for comparing.
std::string Docs(const std::string& yaml) {
  auto r = ParseYamlDocuments(yaml);
  if (!r.ok()) return "ERROR " + r.status().message();
  return picojson::value(picojson::array(r->begin(), r->end())).serialize();
}

// Re-serialises expected JSON so that key order and number spelling match.
std::string Json(const std::string& json) {
  picojson::value v;
  std::string err = picojson::parse(v, json);
  if (!err.empty()) return "BAD TEST JSON " + err;
  return v.serialize();
}

// ASCII text as UTF-16 with a byte-order mark, as PowerShell's ">" writes it.
std::string Utf16(const std::string& ascii, bool little_endian) {
  std::string out = little_endian ? "\xFF\xFE" : "\xFE\xFF";
  for (char c : ascii) out += little_endian ? std::string{c, '\0'} : std::string{'\0', c};
  return out;
}

struct Case {
  const char* name;
  const char* yaml;
  const char* json;  // array of the documents
};

const Case kAccepted[] = {
    // Block collections.
    {"mapping", "a: 1\nb: two\n", R"([{"a":1,"b":"two"}])"},
    {"nested mapping", "a:\n  b:\n    c: x\n  d: y\n", R"([{"a":{"b":{"c":"x"},"d":"y"}}])"},
    {"sequence", "- a\n- b\n", R"([["a","b"]])"},
    {"sequence under key, indented", "k:\n  - a\n  - b\n", R"([{"k":["a","b"]}])"},
    {"sequence under key, not indented", "k:\n- a\n- b\nz: 1\n", R"([{"k":["a","b"],"z":1}])"},
    {"mappings in sequence", "- name: a\n  image: x\n- name: b\n", R"([[{"name":"a","image":"x"},{"name":"b"}]])"},
    {"nested sequences on one line", "- - a\n  - b\n- c\n", R"([[["a","b"],"c"]])"},
    {"sequence item value on next line", "-\n  a: 1\n-\n", R"([[{"a":1},null]])"},
    {"empty value is null", "a:\nb: 1\n", R"([{"a":null,"b":1}])"},
    {"indentless sequence inside item", "- a:\n  - x\n  b: 1\n", R"([[{"a":["x"],"b":1}]])"},
    {"deeper value after key", "a:\n    b: 1\nc: 2\n", R"([{"a":{"b":1},"c":2}])"},
    {"key with spaces and colon in value", "my key: http://x:80/a\n", R"([{"my key":"http://x:80/a"}])"},
    {"quoted keys", "\"a b\": 1\n'c''d': 2\n\"\": 3\n", R"([{"a b":1,"c'd":2,"":3}])"},
    {"keys stay strings", "1: a\ntrue: b\nnull: c\n", R"([{"1":"a","true":"b","null":"c"}])"},
    {"colon without space stays in scalar", "a: b:c\n", R"([{"a":"b:c"}])"},
    {"key starting with colon", ":a: 1\n", R"([{":a":1}])"},
    {"explicit key", "? a\n: b\n? c\n", R"([{"a":"b","c":null}])"},
    {"single-pair mapping in flow sequence", "[a b: c]", R"([[{"a b":"c"}]])"},
    // Scalars.
    {"core schema", "[null, Null, ~, true, False, TRUE, 1, -2, +3, 0o17, 0x1F, 1.5, -.5, 1e3, 2.]",
     R"([[null,null,null,true,false,true,1,-2,3,15,31,1.5,-0.5,1000,2]])"},
    {"not core schema stays string", "[yes, no, on, off, 1_000, 0b1, 1.2.3, 0755x, -, .]",
     R"([["yes","no","on","off","1_000","0b1","1.2.3","0755x","-","."]])"},
    {"leading zero is decimal (YAML 1.2)", "mode: 0755\n", R"([{"mode":755}])"},
    {"quoted never resolves", "a: \"1\"\nb: 'true'\nc: \"null\"\n", R"([{"a":"1","b":"true","c":"null"}])"},
    {"comments", "# top\na: 1 # one\nb: x#y\n  # indented comment\nc: 'q' # q\n", R"([{"a":1,"b":"x#y","c":"q"}])"},
    {"multi-line plain", "a: one\n  two\n\n  three\nb: 1\n", R"([{"a":"one two\nthree","b":1}])"},
    {"double-quoted escapes", R"(a: "t\tn\n q\" b\\ s\/ u\u00e9 x\x41 U\U0001F600")",
     "[{\"a\":\"t\\tn\\n q\\\" b\\\\ s/ u\xC3\xA9 xA U\xF0\x9F\x98\x80\"}]"},
    {"double-quoted folding", "a: \"one\n   two  \n\n  three\\\n  four\"\n", R"([{"a":"one two\nthreefour"}])"},
    {"single-quoted", "a: 'it''s \\n'\n", R"([{"a":"it's \\n"}])"},
    {"single-quoted multi-line", "a: 'x\n  y'\n", R"([{"a":"x y"}])"},
    {"trailing spaces and CRLF", "a: b   \r\nc: d\r\n", R"([{"a":"b","c":"d"}])"},
    {"CR line ends (old Mac)", "a: 1\rb:\r  - x\r  - y\r", R"([{"a":1,"b":["x","y"]}])"},
    {"CRLF and CR in block scalars become \\n", "a: |\r\n  x\r\n  y\r\nb: >\r  p\r  q\r\r  r\r",
     R"([{"a":"x\ny\n","b":"p q\nr\n"}])"},
    {"byte order mark", "\xEF\xBB\xBF" "a: 1\n", R"([{"a":1}])"},
    {"utf-8 text", "name: \xC3\xA9t\xC3\xA9\n", "[{\"name\":\"\xC3\xA9t\xC3\xA9\"}]"},
    {"tab after colon", "a:\tb\n", R"([{"a":"b"}])"},
    // Block scalars.
    {"literal", "a: |\n  x\n   y\n\n  z\nb: 1\n", R"([{"a":"x\n y\n\nz\n","b":1}])"},
    {"literal strip", "a: |-\n  x\n\n", R"([{"a":"x"}])"},
    {"literal keep", "a: |+\n  x\n\n\nb: 1\n", R"([{"a":"x\n\n\n","b":1}])"},
    {"literal at end without newline", "a: |\n  x", R"([{"a":"x"}])"},
    {"literal keep at end without newline", "a: |+\n  x\n\n  y", R"([{"a":"x\n\ny"}])"},
    {"literal empty", "a: |\nb: 1\n", R"([{"a":"","b":1}])"},
    {"literal with comment in header and # in text", "a: | # c\n  # not a comment\n", R"([{"a":"# not a comment\n"}])"},
    {"literal explicit indentation", "a: |2\n    x\n  y\n", R"([{"a":"  x\ny\n"}])"},
    {"literal in sequence", "- |\n  x\n- y\n", R"([["x\n","y"]])"},
    {"literal less-indented comment ends it", "a: |\n    x\n  # c\nb: 1\n", R"([{"a":"x\n","b":1}])"},
    {"folded", "a: >\n  one\n  two\n\n  three\n    more\n  four\n", R"([{"a":"one two\nthree\n  more\nfour\n"}])"},
    {"folded keep at end of input", "a: >+\n  f\n  g\n\n  h\n", R"([{"a":"f g\nh\n"}])"},
    {"folded strip", "a: >-\n  one\n  two\n", R"([{"a":"one two"}])"},
    {"top-level literal", "--- |\n  x\n  y\n", R"(["x\ny\n"])"},
    // Flow collections.
    {"flow sequence", "verbs: [\"get\", \"list\", watch]\n", R"([{"verbs":["get","list","watch"]}])"},
    {"empty flow", "a: {}\nb: []\n", R"([{"a":{},"b":[]}])"},
    {"flow mapping", "a: {x: 1, 'y': [2, {z: ~}], w}\n", R"([{"a":{"x":1,"y":[2,{"z":null}],"w":null}}])"},
    {"flow multi-line with comments", "a: [\n  1, # one\n  2,\n]\n", R"([{"a":[1,2]}])"},
    {"flow plain with colon", "[http://x:1, a:b]", R"([["http://x:1","a:b"]])"},
    {"json document", "{\n  \"kind\": \"Config\",\n  \"n\": [1, -2.5e1, true, null],\n  \"o\": {\"a\":\"b\"}\n}\n",
     R"([{"kind":"Config","n":[1,-25,true,null],"o":{"a":"b"}}])"},
    {"json compact", R"({"a":{"b":[1,2,{"c":"\u0041"}]},"d":""})", R"([{"a":{"b":[1,2,{"c":"A"}]},"d":""}])"},
    // Documents.
    {"several documents", "a: 1\n---\nb: 2\n...\n---\n- c\n", R"([{"a":1},{"b":2},["c"]])"},
    {"empty documents skipped", "---\n---\n# only a comment\n---\na: 1\n---\n", R"([{"a":1}])"},
    {"empty stream", "", "[]"},
    {"only comments", "# x\n\n  # y\n", "[]"},
    {"marker with comment", "--- # first\na: 1\n", R"([{"a":1}])"},
    {"scalar document", "--- hello\n--- \"x\"\n", R"(["hello","x"])"},
    {"null document kept", "null\n", "[null]"},
    {"marker ends block scalar", "a: |\n  x\n---\nb: 1\n", R"([{"a":"x\n"},{"b":1}])"},
    {"dashes inside values are text", "a: ---\nb: --- x\n", R"([{"a":"---","b":"--- x"}])"},
    {"directives", "%YAML 1.2\n%TAG !e! tag:example.com,2000:\n---\na: 1\n", R"([{"a":1}])"},
    // Anchors, aliases and merge keys.
    {"alias of a scalar", "a: &x 1\nb: *x\n", R"([{"a":1,"b":1}])"},
    {"alias of a mapping", "base: &b {x: 1, y: [2]}\nc: *b\n", R"([{"base":{"x":1,"y":[2]},"c":{"x":1,"y":[2]}}])"},
    {"alias of a quoted scalar stays a string", "a: &x '1'\nb: *x\n", R"([{"a":"1","b":"1"}])"},
    {"alias as a key", "k: &k name\n*k : v\n", R"([{"k":"name","name":"v"}])"},
    {"anchor redefined", "- &a 1\n- *a\n- &a 2\n- *a\n", "[[1,1,2,2]]"},
    {"merge key", "base: &b {x: 1, y: 2}\nc:\n  <<: *b\n  y: 3\n", R"([{"base":{"x":1,"y":2},"c":{"x":1,"y":3}}])"},
    {"own keys win over merged ones before them too", "b: &b {x: 1, y: 2}\nc:\n  y: 3\n  <<: *b\n",
     R"([{"b":{"x":1,"y":2},"c":{"x":1,"y":3}}])"},
    {"merge list: earlier mappings win", "- &a {x: 1}\n- &b {x: 2, z: 2}\n- <<: [*a, *b]\n  w: 0\n",
     R"([[{"x":1},{"x":2,"z":2},{"x":1,"z":2,"w":0}]])"},
    {"merge of an inline mapping", "{<<: {x: 1}, y: 2}", R"([{"x":1,"y":2}])"},
    {"quoted << is an ordinary key", "'<<': {x: 1}\n", R"([{"<<":{"x":1}}])"},
    // Tags.
    {"standard tags", "[!!str 1, !!str true, !!int '12', !!int 0x10, !!float 1, !!float '-2.5e1', !!bool 'false', "
     "!!null '', ! 12, !<tag:yaml.org,2002:str> 3, !!map {a: 1}, !!seq [1]]",
     R"([["1","true",12,16,1,-25,false,null,"12","3",{"a":1},[1]]])"},
    {"tagged empty values", "a: !!str\nb: !!null\n", R"([{"a":"","b":null}])"},
    {"!!str data", "certificate-authority-data: !!str LS0tLS1CRUdJTg==\n", R"([{"certificate-authority-data":"LS0tLS1CRUdJTg=="}])"},
    {"tag on a document", "--- !!map\na: 1\n", R"([{"a":1}])"},
    {"tag handle from a directive", "%TAG !y! tag:yaml.org,2002:\n---\na: !y!str 1\n", R"([{"a":"1"}])"},
};

struct Rejected {
  const char* name;
  const char* yaml;
  const char* error;  // exact message
};

const Rejected kRejected[] = {
    // What kubectl refuses too, or what JSON cannot hold.
    {"duplicate key", "a: 1\nb: 2\na: 3\n", "line 3, column 1: duplicate key \"a\""},
    {"duplicate flow key", "{a: 1, a: 2}", "line 1, column 8: duplicate key \"a\""},
    {"duplicate key through an alias", "k: &k a\na: 1\n*k : 2\n", "line 3, column 1: duplicate key \"a\""},
    {"two merge keys", "{<<: {a: 1}, <<: {b: 2}}", "line 1, column 14: duplicate key \"<<\""},
    {"complex key in flow", "{[a]: b}", "line 1, column 2: complex keys (collections as keys) are not supported"},
    {"complex key in block", "? {a: 1}\n: x\n", "line 1, column 3: complex keys (collections as keys) are not supported"},
    {"alias of a collection as key", "a: &m {x: 1}\n*m : 2\n",
     "line 2, column 1: complex keys (collections as keys) are not supported"},
    {"empty key", "?\n: x\n", "line 1, column 2: empty keys are not supported"},
    {"empty key in block", ": x\n", "line 1, column 1: did not find expected key (while parsing a block mapping at line 1, column 1)"},
    {"infinity", "a: .inf\n", "line 1, column 4: .inf cannot be represented in JSON"},
    {"nan in flow", "[-.NaN]", "line 1, column 2: -.NaN cannot be represented in JSON"},
    {"number out of range", "a: 1e999\n", "line 1, column 4: number 1e999 is out of range"},
    {"hex out of range", "a: 0x1" "00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "000000000000000000000000000000000000000000000000000000000000000000000000000\n",
     "line 1, column 4: number 0x1" "00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "000000000000000000000000000000000000000000000000000000000000000000000000000 is out of range"},
    // Anchors and aliases.
    {"alias without anchor", "a: 1\nb: *x\n", "line 2, column 4: alias *x refers to no anchor before it"},
    {"alias inside its own anchor", "a: &x [1, *x]\n", "line 1, column 11: alias *x refers to no anchor before it"},
    {"anchors end with their document", "a: &x 1\n---\nb: *x\n", "line 3, column 4: alias *x refers to no anchor before it"},
    {"merge of a scalar", "a: &x 1\nb:\n  <<: *x\n",
     "line 3, column 7: the value of a merge key (<<) must be a mapping or a list of mappings"},
    {"merge of a list with a scalar", "a: &x {k: 1}\nb: {<<: [*x, 2]}\n",
     "line 2, column 9: the value of a merge key (<<) must be a mapping or a list of mappings"},
    // Tags.
    {"local tag", "--- !foo\na: 1\n", "line 1, column 5: tag !foo is not supported (only !!str, !!int, !!float, !!bool, !!null, !!map, !!seq)"},
    {"local tag on a scalar", "a: !secret x\n", "line 1, column 4: tag !secret is not supported (only !!str, !!int, !!float, !!bool, !!null, !!map, !!seq)"},
    {"!!binary", "a: !!binary aGk=\n", "line 1, column 4: tag !!binary is not supported (only !!str, !!int, !!float, !!bool, !!null, !!map, !!seq)"},
    {"!!map on a scalar", "a: !!map x\n", "line 1, column 4: !!map on a scalar"},
    {"!!seq on a mapping", "a: !!seq {x: 1}\n", "line 1, column 4: !!seq on a mapping"},
    {"!!map on a sequence", "!!map [1]", "line 1, column 1: !!map on a sequence"},
    {"!!str on a mapping", "a: !!str\n  b: 1\n", "line 1, column 4: !!str on a mapping"},
    {"!!int on a sequence", "[!!int [1]]", "line 1, column 2: !!int on a sequence"},
    {"!!int of a float", "a: !!int 1.5\n", "line 1, column 4: \"1.5\" is not a valid !!int"},
    {"!!int of text", "a: !!int x\n", "line 1, column 4: \"x\" is not a valid !!int"},
    {"!!bool of a YAML 1.1 bool", "a: !!bool yes\n", "line 1, column 4: \"yes\" is not a valid !!bool"},
    {"!!null of 0", "a: !!null 0\n", "line 1, column 4: \"0\" is not a valid !!null"},
    {"!!float of infinity", "a: !!float .inf\n", "line 1, column 4: .inf cannot be represented in JSON"},
    // Syntax, as libyaml words it.
    {"tab indentation", "a:\n\tb: 1\n",
     "line 2, column 1: found character that cannot start any token (while scanning for the next token at line 2, column 1)"},
    {"bad indentation", "a:\n    b: 1\n  c: 2\n",
     "line 3, column 3: did not find expected key (while parsing a block mapping at line 1, column 1)"},
    {"mapping value in plain", "a: b: c\n", "line 1, column 5: mapping values are not allowed in this context"},
    {"sequence on key line", "a: - b\n", "line 1, column 4: block sequence entries are not allowed in this context"},
    {"sequence after mapping", "a: 1\n- b\n",
     "line 2, column 1: did not find expected key (while parsing a block mapping at line 1, column 1)"},
    {"scalar among keys", "a: 1\nb\n",
     "line 3, column 1: could not find expected ':' (while scanning a simple key at line 2, column 1)"},
    {"unterminated double", "a: \"x\nb: 1\n",
     "line 3, column 1: found unexpected end of stream (while scanning a quoted scalar at line 1, column 4)"},
    {"unterminated flow", "a: [1, 2\n\n",
     "line 3, column 1: did not find expected ',' or ']' (while parsing a flow sequence at line 1, column 4)"},
    {"content after document", "[a]\nb\n", "line 2, column 1: did not find expected <document start>"},
    {"bad escape", "a: \"\\q\"\n",
     "line 1, column 5: found unknown escape character (while parsing a quoted scalar at line 1, column 4)"},
    {"surrogate escape", "a: \"\\ud800\"\n",
     "line 1, column 7: found invalid Unicode character escape code (while parsing a quoted scalar at line 1, column 4)"},
    {"reserved indicator", "a: @x\n",
     "line 1, column 4: found character that cannot start any token (while scanning for the next token at line 1, column 4)"},
    // Encoding.
    {"invalid utf-8", "a: 1\nb: \xC3\x28\n", "line 2, column 5: invalid trailing UTF-8 octet (0x28)"},
    {"overlong utf-8", "a: \xC0\xAF\n", "line 1, column 4: invalid length of a UTF-8 sequence"},
    {"utf-8 surrogate", "a: \xED\xA0\x80\n", "line 1, column 4: invalid Unicode character (0xD800)"},
    {"truncated utf-8", "a: \xE2\x82", "line 1, column 4: incomplete UTF-8 octet sequence"},
    {"control character", "x: 1\r\na: \x01\n", "line 2, column 4: control characters are not allowed (0x01)"},
};

}  // namespace

TEST_CASE("accepted YAML parses to the expected JSON") {
  for (const Case& c : kAccepted) {
    SECTION(c.name) {
      INFO(c.yaml);
      CHECK(Docs(c.yaml) == Json(c.json));
    }
  }
}

TEST_CASE("rejected YAML gives an error naming the line and column") {
  for (const Rejected& c : kRejected) {
    SECTION(c.name) {
      INFO(c.yaml);
      auto r = ParseYamlDocuments(c.yaml);
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().code() == Status::kInvalid);
      CHECK(r.status().message() == c.error);
    }
  }
}

TEST_CASE("nul byte in the middle is refused, not treated as the end") {
  auto r = ParseYamlDocuments(std::string("a: 1\nb: x\0y\n", 12));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() == "line 2, column 5: control characters are not allowed (0x00)");
}

TEST_CASE("keys longer than 1024 characters only as explicit keys (YAML's limit on implicit keys)") {
  const std::string key(1100, 'k');
  auto r = ParseYamlDocuments("? " + key + "\n: 1\n");
  REQUIRE(r.ok());
  CHECK((*r)[0].get(key).get<double>() == 1);
  auto implicit = ParseYamlDocuments(key + ": 1\n");
  REQUIRE_FALSE(implicit.ok());
  CHECK(implicit.status().message() ==
        "line 1, column 1101: mapping values are not allowed in this context");
}

TEST_CASE("UTF-16 with a byte-order mark, either byte order") {
  const std::string text = "a: 1\r\nb: [x, 'y']\r\n";
  for (bool little : {true, false}) {
    INFO(little);
    CHECK(Docs(Utf16(text, little)) == Json(R"([{"a":1,"b":["x","y"]}])"));
  }
  SECTION("non-ASCII characters and a surrogate pair come out as UTF-8") {
    // "k: é😀" in UTF-16LE.
    const std::string le("\xFF\xFEk\0:\0 \0\xE9\0\x3D\xD8\x00\xDE", 14);
    CHECK(Docs(le) == "[{\"k\":\"\xC3\xA9\xF0\x9F\x98\x80\"}]");
  }
  SECTION("a lone surrogate is refused, at its byte") {
    const std::string le("\xFF\xFEk\0:\0 \0\x3D\xD8x\0", 12);
    auto r = ParseYamlDocuments(le);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == "byte 10: expected low surrogate area (0x78)");
  }
}

TEST_CASE("hostile input: deep nesting is refused, not a crash") {
  SECTION("flow") {
    auto r = ParseYamlDocuments(std::string(100000, '['));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == "line 1, column 201: nesting deeper than 200 levels");
  }
  SECTION("block sequences on one line") {
    std::string deep;
    for (int i = 0; i < 5000; ++i) deep += "- ";
    auto r = ParseYamlDocuments(deep + "x\n");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == "line 1, column 401: nesting deeper than 200 levels");
  }
  SECTION("block mappings") {
    std::string deep;
    for (int i = 0; i < 300; ++i) deep += std::string(i, ' ') + "k:\n";
    auto r = ParseYamlDocuments(deep);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == "line 201, column 201: nesting deeper than 200 levels");
  }
  SECTION("just under the limit is fine") {
    std::string ok = std::string(200, '[') + std::string(200, ']');
    CHECK(ParseYamlDocuments(ok).ok());
  }
  SECTION("aliases nest their anchors' values too") {
    // Line i + 1 holds a value 150 + i levels deep, in the top sequence: too deep at line 51.
    std::string text = "- &a0 " + std::string(150, '[') + std::string(150, ']') + "\n";
    for (int i = 1; i <= 60; ++i) text += "- &a" + std::to_string(i) + " [*a" + std::to_string(i - 1) + "]\n";
    auto r = ParseYamlDocuments(text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == "line 51, column 9: nesting deeper than 200 levels");
  }
}

TEST_CASE("hostile input: aliases that expand without bound stop at the node limit") {
  SECTION("billion laughs") {
    std::string text = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
    for (int i = 1; i < 10; ++i) {
      std::string prev = "*a" + std::to_string(i - 1);
      text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev;
      for (int k = 1; k < 10; ++k) text += ", " + prev;
      text += "]\n";
    }
    auto r = ParseYamlDocuments(text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() ==
          "line 6, column 10: more than 200000 nodes or 16 MiB of text (aliases count each time they are used)");
  }
  SECTION("long strings repeated") {
    std::string text = "a: &a '" + std::string(1 << 20, 'x') + "'\nb: [*a";
    for (int k = 1; k < 20; ++k) text += ", *a";
    auto r = ParseYamlDocuments(text + "]\n");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() ==
          "line 2, column 61: more than 200000 nodes or 16 MiB of text (aliases count each time they are used)");
  }
  SECTION("just under the limit is fine") {
    std::string text = "a: &a [x";
    for (int k = 1; k < 1000; ++k) text += ",x";
    text += "]\nb: [*a";  // 1,001 nodes each: 1 + 1,001 + 1 + 198 * 1,001 + 2 (keys) = 199,203 in all
    for (int k = 1; k < 198; ++k) text += ",*a";
    auto r = ParseYamlDocuments(text + "]\n");
    REQUIRE(r.ok());
    CHECK((*r)[0].get("b").get<picojson::array>().size() == 198);
  }
}

TEST_CASE("hostile input: every prefix of a real file ends, with a value or an error") {
  // Truncation exercises every "unterminated" path; none may crash or loop.
  const std::string text =
      "a: \"x\\ty\"\nb: [1, {c: 'd'}]\nlit: |-\n  q\n- z\n---\nk:\n- |\n  v\n";
  for (size_t n = 0; n <= text.size(); ++n) {
    auto r = ParseYamlDocuments(text.substr(0, n));
    CHECK((r.ok() || r.status().message().rfind("line ", 0) == 0));
  }
}

TEST_CASE("a Deployment as people write it") {
  const char* yaml = R"(# The provisioner, one replica.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: hostpath-provisioner
  namespace: kube-system
  labels: {app: hostpath-provisioner}
spec:
  replicas: 1
  strategy:
    type: Recreate
  selector:
    matchLabels:
      app: hostpath-provisioner
  template:
    metadata:
      labels:
        app: hostpath-provisioner
    spec:
      serviceAccountName: hostpath-provisioner
      containers:
        - name: hostpath-provisioner
          image: "example.org/hostpath-provisioner:1.0"
          args: ["--pv-dir=/var/kubernetes", "-v", "2"]
          env:
          - name: NODE_NAME
            valueFrom:
              fieldRef:
                fieldPath: spec.nodeName
          - name: RECLAIM
            value: "Delete"
          ports:
          - containerPort: 8080
          securityContext:
            readOnlyRootFilesystem: true
            runAsUser: 0
          volumeMounts:
            - name: pv-volume
              mountPath: /var/kubernetes
      volumes:
        - name: pv-volume
          hostPath:
            path: /var/kubernetes
            type: DirectoryOrCreate
)";
  auto r = ParseYamlDocuments(yaml);
  REQUIRE(r.ok());
  REQUIRE(r->size() == 1);
  const picojson::value& d = (*r)[0];
  CHECK(d.get("kind").to_str() == "Deployment");
  CHECK(d.get("metadata").get("labels").get("app").to_str() == "hostpath-provisioner");
  CHECK(d.get("spec").get("replicas").get<double>() == 1);
  const picojson::value& c = d.get("spec").get("template").get("spec").get("containers").get(0);
  CHECK(c.get("image").to_str() == "example.org/hostpath-provisioner:1.0");
  CHECK(c.get("args").get(0).to_str() == "--pv-dir=/var/kubernetes");
  CHECK(c.get("args").get(2).to_str() == "2");
  CHECK(c.get("env").get(0).get("valueFrom").get("fieldRef").get("fieldPath").to_str() == "spec.nodeName");
  CHECK(c.get("env").get(1).get("value").to_str() == "Delete");
  CHECK(c.get("ports").get(0).get("containerPort").get<double>() == 8080);
  CHECK(c.get("securityContext").get("readOnlyRootFilesystem").get<bool>());
  CHECK(c.get("volumeMounts").get(0).get("mountPath").to_str() == "/var/kubernetes");
  CHECK(d.get("spec").get("template").get("spec").get("volumes").get(0).get("hostPath").get("type").to_str() ==
        "DirectoryOrCreate");
}

TEST_CASE("RBAC: several documents with ClusterRole rules") {
  const char* yaml = R"(---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: hostpath-provisioner
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: hostpath-provisioner
rules:
- apiGroups: [""]
  resources: ["persistentvolumes"]
  verbs: ["get", "list", "watch", "create", "delete"]
- apiGroups:
  - ""
  resources:
  - persistentvolumeclaims
  verbs: [get, list, watch]
- apiGroups: ["storage.k8s.io"]
  resources: ["storageclasses"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch", "update"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: hostpath-provisioner
subjects:
  - kind: ServiceAccount
    name: hostpath-provisioner
    namespace: kube-system
roleRef:
  kind: ClusterRole
  name: hostpath-provisioner
  apiGroup: rbac.authorization.k8s.io
)";
  auto r = ParseYamlDocuments(yaml);
  REQUIRE(r.ok());
  REQUIRE(r->size() == 3);
  CHECK((*r)[0].get("kind").to_str() == "ServiceAccount");
  const picojson::value& rules = (*r)[1].get("rules");
  REQUIRE(rules.is<picojson::array>());
  CHECK(rules.get<picojson::array>().size() == 4);
  CHECK(rules.get(0).serialize() ==
        R"({"apiGroups":[""],"resources":["persistentvolumes"],"verbs":["get","list","watch","create","delete"]})");
  CHECK(rules.get(1).serialize() ==
        R"({"apiGroups":[""],"resources":["persistentvolumeclaims"],"verbs":["get","list","watch"]})");
  CHECK((*r)[2].get("subjects").get(0).get("namespace").to_str() == "kube-system");
  CHECK((*r)[2].get("roleRef").get("kind").to_str() == "ClusterRole");
}

TEST_CASE("a kubeconfig as kubectl writes it") {
  const char* yaml = R"(apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: TFMwdExTMUNSVWRKVGc9PQ==
    server: https://127.0.0.1:6443
  name: kind
contexts:
- context:
    cluster: kind
    namespace: storage
    user: admin
  name: kind
current-context: kind
kind: Config
preferences: {}
users:
- name: admin
  user:
    token: abc.def
)";
  auto r = ParseYamlDocuments(yaml);
  REQUIRE(r.ok());
  REQUIRE(r->size() == 1);
  const picojson::value& d = (*r)[0];
  CHECK(d.get("current-context").to_str() == "kind");
  CHECK(d.get("clusters").get(0).get("cluster").get("server").to_str() == "https://127.0.0.1:6443");
  CHECK(d.get("clusters").get(0).get("cluster").get("certificate-authority-data").to_str() ==
        "TFMwdExTMUNSVWRKVGc9PQ==");
  CHECK(d.get("contexts").get(0).get("context").get("namespace").to_str() == "storage");
  CHECK(d.get("users").get(0).get("user").get("token").to_str() == "abc.def");
  CHECK(d.get("preferences").is<picojson::object>());
}
