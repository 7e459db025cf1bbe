// Tests for yaml.hpp: tables of accepted inputs (compared with the JSON they must equal),
// rejected inputs (with the error they must give), and whole files like this project's.
#include "yaml.hpp"

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
    // Scalars.
    {"core schema", "[null, Null, ~, true, False, TRUE, 1, -2, +3, 0o17, 0x1F, 1.5, -.5, 1e3, 2.]",
     R"([[null,null,null,true,false,true,1,-2,3,15,31,1.5,-0.5,1000,2]])"},
    {"not core schema stays string", "[yes, no, on, off, 1_000, 0b1, 1.2.3, 0755x, -, .]",
     R"([["yes","no","on","off","1_000","0b1","1.2.3","0755x","-","."]])"},
    {"leading zero is decimal (YAML 1.2)", "mode: 0755\n", R"([{"mode":755}])"},
    {"quoted never resolves", "a: \"1\"\nb: 'true'\nc: \"null\"\n", R"([{"a":"1","b":"true","c":"null"}])"},
    {"comments", "# top\na: 1 # one\nb: x#y\n  # indented comment\nc: 'q' # q\n", R"([{"a":1,"b":"x#y","c":"q"}])"},
    {"multi-line plain", "a: one\n  two\n\n  three\nb: 1\n", R"([{"a":"one two\nthree","b":1}])"},
    {"double-quoted escapes", R"(a: "t\tn\n q\" b\\ s\/ u\u00e9 x\x41 U\U0001F600 p\ud83d\ude00")",
     "[{\"a\":\"t\\tn\\n q\\\" b\\\\ s/ u\xC3\xA9 xA U\xF0\x9F\x98\x80 p\xF0\x9F\x98\x80\"}]"},
    {"double-quoted folding", "a: \"one\n   two  \n\n  three\\\n  four\"\n", R"([{"a":"one two\nthreefour"}])"},
    {"single-quoted", "a: 'it''s \\n'\n", R"([{"a":"it's \\n"}])"},
    {"single-quoted multi-line", "a: 'x\n  y'\n", R"([{"a":"x y"}])"},
    {"trailing spaces and CRLF", "a: b   \r\nc: d\r\n", R"([{"a":"b","c":"d"}])"},
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
    {"top-level literal", "--- |\nx\ny\n", R"(["x\ny\n"])"},
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
};

struct Rejected {
  const char* name;
  const char* yaml;
  const char* error;  // exact message
};

const Rejected kRejected[] = {
    {"anchor", "a: &x 1\n", "line 1: anchors (&), aliases (*) and tags (!) are not supported"},
    {"alias", "a: 1\nb: *x\n", "line 2: anchors (&), aliases (*) and tags (!) are not supported"},
    {"tag", "a: !!str 1\n", "line 1: anchors (&), aliases (*) and tags (!) are not supported"},
    {"tag on document", "--- !foo\na: 1\n", "line 1: anchors (&), aliases (*) and tags (!) are not supported"},
    {"merge key", "a:\n  <<: *base\n", "line 2: anchors (&), aliases (*) and tags (!) are not supported"},
    {"complex key", "? a\n: b\n", "line 1: complex keys (?) are not supported"},
    {"flow complex key", "{[a]: b}", "line 1: complex keys (collections as keys) are not supported"},
    {"directive", "%YAML 1.2\n---\na: 1\n", "line 1: directives (%) are not supported"},
    {"duplicate key", "a: 1\nb: 2\na: 3\n", "line 3: duplicate key \"a\""},
    {"duplicate flow key", "{a: 1, a: 2}", "line 1: duplicate key \"a\""},
    {"tab indentation", "a:\n\tb: 1\n", "line 2: tab character in indentation"},
    {"bad indentation", "a:\n    b: 1\n  c: 2\n", "line 3: bad indentation of a mapping entry"},
    {"sequence then deeper", "k:\n  - a\n    - b: 1\n", "line 3: unexpected ':' (quote a value that contains \": \")"},
    {"mapping value in plain", "a: b: c\n", "line 1: unexpected ':' (quote a value that contains \": \")"},
    {"sequence on key line", "a: - b\n", "line 1: a sequence cannot start on the same line as its key"},
    {"sequence after mapping", "a: 1\n- b\n", "line 2: expected \"key: value\", found a sequence entry"},
    {"scalar among keys", "a: 1\nb\n", "line 2: expected \"key: value\" at this indentation"},
    {"unterminated double", "a: \"x\nb: 1\n", "line 1: unterminated quoted string"},
    {"unterminated single", "a: 'x", "line 1: unterminated quoted string"},
    {"unterminated flow", "a: [1, 2\n\n", "line 1: unterminated flow collection"},
    {"unclosed flow before next key", "a: [1, 2\nb: 3\n", "line 2: expected ',' or ']', found ':'"},
    {"flow cut by document", "a: [1,\n---\n", "line 1: unterminated flow collection"},
    {"missing comma", "[a b: c]", "line 1: expected ',' or ']', found ':'"},
    {"empty flow entry", "[a,,b]", "line 1: expected a value, found ','"},
    {"text after quoted", "a: \"x\" y\n", "line 1: unexpected 'y' after a value"},
    {"text after flow", "a: [1] 2\n", "line 1: unexpected '2' after a value"},
    {"content after document", "[a]\nb\n", "line 2: unexpected content after the document's end"},
    {"bad escape", "a: \"\\q\"\n", "line 1: invalid escape \\q"},
    {"bad escape quotes whole character", "a: \"\\\xC3\xA9\"\n", "line 1: invalid escape \\\xC3\xA9"},
    {"text after value quotes whole character", "a: \"x\" \xC3\xA9\n", "line 1: unexpected '\xC3\xA9' after a value"},
    {"complex key among keys", "a: 1\n? b\n", "line 2: complex keys (?) are not supported"},
    {"block scalar as flow key", "{|a: b}", "line 1: block scalars are not allowed inside [ ] or { }"},
    {"bad hex escape", "a: \"\\u12g4\"\n", "line 1: invalid hex digit in escape"},
    {"lone surrogate", "a: \"\\ud800\"\n", "line 1: invalid code point in escape"},
    {"bad surrogate pair", "a: \"\\ud800\\u0041\"\n", "line 1: invalid UTF-16 surrogate pair in escape"},
    {"invalid utf-8", "a: 1\nb: \xC3\x28\n", "line 2: invalid UTF-8 or control character"},
    {"overlong utf-8", "a: \xC0\xAF\n", "line 1: invalid UTF-8 or control character"},
    {"utf-8 surrogate", "a: \xED\xA0\x80\n", "line 1: invalid UTF-8 or control character"},
    {"truncated utf-8", "a: \xE2\x82", "line 1: invalid UTF-8 or control character"},
    {"control character", "a: \x01\n", "line 1: invalid UTF-8 or control character"},
    {"lone carriage return", "a: 1\rb: 2\n", "line 1: invalid UTF-8 or control character"},
    {"infinity", "a: .inf\n", "line 1: .inf cannot be represented in JSON"},
    {"nan in flow", "[-.NaN]", "line 1: -.NaN cannot be represented in JSON"},
    {"number out of range", "a: 1e999\n", "line 1: number 1e999 is out of range"},
    {"empty key", ": x\n", "line 1: empty keys are not supported"},
    {"reserved indicator", "a: @x\n", "line 1: a plain value cannot start with '@'; quote it"},
    {"block scalar in flow", "[|\n x]", "line 1: block scalars are not allowed inside [ ] or { }"},
    {"block scalar header junk", "a: |x\n  y\n", "line 1: unexpected 'x' after a value"},
    {"content after ...", "a: 1\n... b\n", "line 2: unexpected 'b' after a value"},
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

TEST_CASE("rejected YAML gives an error naming the line") {
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
  CHECK(r.status().message() == "line 2: invalid UTF-8 or control character");
}

TEST_CASE("hostile input: deep nesting is refused, not a crash") {
  SECTION("flow") {
    auto r = ParseYamlDocuments(std::string(100000, '['));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == "line 1: nesting deeper than 200 levels");
  }
  SECTION("block sequences on one line") {
    std::string deep;
    for (int i = 0; i < 5000; ++i) deep += "- ";
    auto r = ParseYamlDocuments(deep + "x\n");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == "line 1: nesting deeper than 200 levels");
  }
  SECTION("block mappings") {
    std::string deep;
    for (int i = 0; i < 300; ++i) deep += std::string(i, ' ') + "k:\n";
    auto r = ParseYamlDocuments(deep);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == "line 201: nesting deeper than 200 levels");
  }
  SECTION("just under the limit is fine") {
    std::string ok = std::string(199, '[') + std::string(199, ']');
    CHECK(ParseYamlDocuments(ok).ok());
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
