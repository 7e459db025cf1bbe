// The manifests a user installs (`kubectl create -f manifests/`): each parses, has the fields
// the API requires, and the Deployment agrees with itself and with the program (PV_DIR mounted
// at the path it passes, probes on the endpoint the program serves, the StorageClass names our
// provisioner). The examples (examples/) parse too, are not installed, and their claim asks
// for the class the manifests install.
// That RBAC covers every request is checked end to end: the fake API server enforces
// manifests/rbac.yaml and the e2e tests assert that nothing was denied.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "config.hpp"
#include "yaml.hpp"

namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<picojson::value> Docs(const std::string& path) {
  Result<std::vector<picojson::value>> docs = ParseYamlDocuments(Read(path));
  INFO(path);
  REQUIRE(docs.ok());
  return *docs;
}

std::string Str(const picojson::value& v) { return v.is<std::string>() ? v.get<std::string>() : ""; }

const picojson::value* Find(const std::vector<picojson::value>& docs, const std::string& kind) {
  for (const auto& d : docs)
    if (Str(d.get("kind")) == kind) return &d;
  return nullptr;
}

// A DNS-1123 subdomain, as object names must be.
bool ValidName(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  return s.front() != '-' && s.back() != '-';
}

// What `kubectl create -f manifests/` reads: every *.yaml, *.yml and *.json directly in the folder.
const char* kInstalled[] = {"manifests/deployment.yaml", "manifests/rbac.yaml", "manifests/storageclass.yaml"};
const char* kExamples[] = {"examples/test-claim.yaml", "examples/test-pod.yaml"};

// The files directly in `dir` that `kubectl create -f dir` would read, sorted.
std::vector<std::string> KubectlReads(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  REQUIRE(d != nullptr);
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    for (const char* ext : {".yaml", ".yml", ".json"})
      if (name.size() > std::strlen(ext) && name.compare(name.size() - std::strlen(ext), std::string::npos, ext) == 0)
        out.push_back(dir + "/" + name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// Checks apiVersion, kind and names of every object in the files; returns how many there are.
int CheckObjects(const std::vector<std::string>& files) {
  std::map<std::string, bool> namespaced = {{"ServiceAccount", true}, {"ClusterRole", false}, {"ClusterRoleBinding", false},
                                            {"Role", true},           {"RoleBinding", true},   {"Deployment", true},
                                            {"StorageClass", false},  {"PersistentVolumeClaim", true}, {"Pod", true}};
  int objects = 0;
  for (const std::string& f : files) {
    for (const picojson::value& d : Docs(f)) {
      std::string kind = Str(d.get("kind"));
      INFO(f << ": " << kind);
      CHECK_FALSE(Str(d.get("apiVersion")).empty());
      REQUIRE(namespaced.count(kind) == 1);
      CHECK(ValidName(Str(d.get("metadata").get("name"))));
      if (namespaced[kind]) CHECK(ValidName(Str(d.get("metadata").get("namespace"))));
      ++objects;
    }
  }
  return objects;
}

}  // namespace

TEST_CASE("the install is exactly the manifests, each object has apiVersion, kind and a valid name", "[manifests]") {
  // No claim or pod among them: the examples are not installed by `kubectl create -f manifests/`.
  CHECK(KubectlReads("manifests") == std::vector<std::string>(std::begin(kInstalled), std::end(kInstalled)));
  CHECK(CheckObjects(KubectlReads("manifests")) == 7);
  for (const std::string& f : KubectlReads("manifests"))
    for (const picojson::value& d : Docs(f)) {
      INFO(f);
      CHECK(Str(d.get("kind")) != "PersistentVolumeClaim");
      CHECK(Str(d.get("kind")) != "Pod");
    }
}

TEST_CASE("the examples parse: one claim and one pod that mounts it", "[manifests]") {
  CHECK(CheckObjects(std::vector<std::string>(std::begin(kExamples), std::end(kExamples))) == 2);
  auto claim = Docs("examples/test-claim.yaml");
  auto pod = Docs("examples/test-pod.yaml");
  REQUIRE(Find(claim, "PersistentVolumeClaim"));
  REQUIRE(Find(pod, "Pod"));
  const picojson::value& volume = Find(pod, "Pod")->get("spec").get("volumes").get(0);
  CHECK(Str(volume.get("persistentVolumeClaim").get("claimName")) ==
        Str(Find(claim, "PersistentVolumeClaim")->get("metadata").get("name")));
}

TEST_CASE("the StorageClass names the default provisioner and a valid reclaim policy; the example claim uses it", "[manifests]") {
  auto docs = Docs("manifests/storageclass.yaml");
  const picojson::value* sc = Find(docs, "StorageClass");
  REQUIRE(sc);
  CHECK(Str(sc->get("provisioner")) == kDefaultProvisionerName);
  std::string policy = Str(sc->get("reclaimPolicy"));
  CHECK((policy == "Delete" || policy == "Retain"));
  std::string mode = Str(sc->get("volumeBindingMode"));
  CHECK((mode == "Immediate" || mode == "WaitForFirstConsumer"));
  auto claim = Docs("examples/test-claim.yaml");
  REQUIRE(Find(claim, "PersistentVolumeClaim"));
  CHECK(Str(Find(claim, "PersistentVolumeClaim")->get("spec").get("storageClassName")) == Str(sc->get("metadata").get("name")));
}

TEST_CASE("the Deployment mounts the PV_DIR it passes, at the same host path, and probes our endpoint", "[manifests]") {
  auto docs = Docs("manifests/deployment.yaml");
  const picojson::value* dep = Find(docs, "Deployment");
  REQUIRE(dep);
  const picojson::value& spec = dep->get("spec");
  CHECK(spec.get("replicas").get<double>() == 1);
  CHECK(Str(spec.get("strategy").get("type")) == "Recreate");
  // selector matches the template's labels
  for (const auto& [k, v] : spec.get("selector").get("matchLabels").get<picojson::object>())
    CHECK(Str(spec.get("template").get("metadata").get("labels").get(k)) == Str(v));
  const picojson::value& pod = spec.get("template").get("spec");
  const picojson::value& c = pod.get("containers").get(0);
  CHECK(Str(c.get("imagePullPolicy")) == "IfNotPresent");
  CHECK_FALSE(Str(c.get("image")).empty());

  std::map<std::string, std::string> env;
  for (const auto& e : c.get("env").get<picojson::array>()) env[Str(e.get("name"))] = Str(e.get("value"));
  std::string pv_dir = env.count("PV_DIR") ? env["PV_DIR"] : kDefaultPvDir;
  // Every env var the Deployment sets is one the program reads, with a valid value.
  std::map<std::string, std::string> known;
  for (const Setting& s : Settings())
    if (*s.env) known[s.env] = s.flag;
  Result<Config> cfg = ParseConfig({}, [&env](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  REQUIRE(cfg.ok());
  for (const auto& [name, value] : env) {
    INFO(name);
    CHECK(known.count(name) == 1);
  }

  std::string volume_name, mount_path;
  for (const auto& m : c.get("volumeMounts").get<picojson::array>())
    if (Str(m.get("mountPath")) == pv_dir) volume_name = Str(m.get("name"));
  INFO("PV_DIR " << pv_dir);
  REQUIRE_FALSE(volume_name.empty());
  std::string host_path;
  for (const auto& v : pod.get("volumes").get<picojson::array>())
    if (Str(v.get("name")) == volume_name) host_path = Str(v.get("hostPath").get("path"));
  CHECK(host_path == pv_dir);  // the same path inside and outside: PVs name host paths

  // probes hit the endpoint on the port the program listens on
  std::string port = cfg->metrics_address.substr(cfg->metrics_address.rfind(':') + 1);
  double container_port = 0;
  std::string port_name;
  for (const auto& p : c.get("ports").get<picojson::array>()) {
    container_port = p.get("containerPort").get<double>();
    port_name = Str(p.get("name"));
  }
  CHECK(std::to_string(static_cast<int>(container_port)) == port);
  CHECK(Str(c.get("livenessProbe").get("httpGet").get("path")) == "/healthz");
  CHECK(Str(c.get("readinessProbe").get("httpGet").get("path")) == "/readyz");
  CHECK(Str(c.get("livenessProbe").get("httpGet").get("port")) == port_name);
  CHECK(Str(pod.get("serviceAccountName")) == Str(Find(Docs("manifests/rbac.yaml"), "ServiceAccount")->get("metadata").get("name")));
}

TEST_CASE("kustomize renders the base and the example overlay, which changes PV_DIR everywhere", "[manifests]") {
  if (std::system("command -v kubectl >/dev/null 2>&1") != 0) {
    WARN("kubectl not installed: kustomize rendering not checked");
    return;
  }
  for (const char* dir : {"manifests", "manifests/overlays/example"}) {
    std::string out = "/tmp/hp-kustomize-" + std::to_string(::getpid()) + ".yaml";
    std::string cmd = std::string("kubectl kustomize ") + dir + " > " + out + " 2>&1";
    INFO(cmd);
    REQUIRE(std::system(cmd.c_str()) == 0);
    auto docs = Docs(out);
    std::string rendered = Read(out);
    std::remove(out.c_str());
    CHECK(docs.size() == 7);  // the objects of manifests/*.yaml, no example
    if (std::string(dir) != "manifests") {
      CHECK(rendered.find("/var/kubernetes") == std::string::npos);
      CHECK(rendered.find("/srv/volumes") != std::string::npos);
    }
  }
}
