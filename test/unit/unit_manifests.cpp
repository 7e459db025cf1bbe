// The manifests a user installs: `kubectl create -f manifests/` (single-node mode, a Deployment)
// or, instead, `kubectl create -f manifests/daemonset/` (node-aware mode, a DaemonSet). Each file
// parses, has the fields the API requires, and each workload agrees with itself and with the
// program (PV_DIR mounted at the path it passes, probes on the endpoint the program serves, the
// StorageClass names our provisioner). The two installs share object names, so one cannot be
// added to the other. The examples (examples/) parse too, are not installed, and their claim asks
// for the class the manifests install. kubectl itself, when installed, reads each folder as
// `kubectl create -f` and `kubectl apply -k` would.
// That RBAC covers every request is checked end to end: the fake API server enforces
// manifests/rbac.yaml and the e2e tests assert that nothing was denied. The node-aware RBAC is
// checked here against the list of requests that mode makes.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include <httplib.h>

#include "base/config.hpp"
#include "kube/leader.hpp"
#include "decide/reconcile.hpp"
#include "base/yaml.hpp"

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
// What `kubectl create -f manifests/daemonset/` reads, the node-aware alternative.
const char* kInstalledDaemonSet[] = {"manifests/daemonset/csidriver.yaml", "manifests/daemonset/daemonset.yaml",
                                     "manifests/daemonset/rbac.yaml", "manifests/daemonset/storageclass.yaml"};
const char* kExamples[] = {"examples/clone-claim.yaml", "examples/test-claim.yaml", "examples/test-pod.yaml"};

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
                                            {"DaemonSet", true},      {"StorageClass", false}, {"PersistentVolumeClaim", true},
                                            {"Pod", true},            {"Lease", true},         {"CSIDriver", false}};
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

// An object as "Kind namespace/name" ("Kind name" when cluster-scoped).
std::string IdOf(const picojson::value& d) {
  std::string ns = Str(d.get("metadata").get("namespace"));
  return Str(d.get("kind")) + " " + (ns.empty() ? "" : ns + "/") + Str(d.get("metadata").get("name"));
}

// IdOf every object in the files, in file order.
std::vector<std::string> ObjectIds(const std::vector<std::string>& files) {
  std::vector<std::string> out;
  for (const std::string& f : files)
    for (const picojson::value& d : Docs(f)) out.push_back(IdOf(d));
  return out;
}

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// A container's environment: name -> value; a variable from the downward API reads
// "fieldRef:<fieldPath>".
std::map<std::string, std::string> EnvOf(const picojson::value& container) {
  std::map<std::string, std::string> env;
  for (const auto& e : container.get("env").get<picojson::array>()) {
    std::string& value = env[Str(e.get("name"))];
    if (!e.contains("valueFrom"))
      value = Str(e.get("value"));
    else if (e.get("valueFrom").contains("fieldRef"))
      value = "fieldRef:" + Str(e.get("valueFrom").get("fieldRef").get("fieldPath"));
    else
      value = "valueFrom";  // a ConfigMap, Secret or resource: none is used
  }
  return env;
}

// Settings of node-aware mode that manifests/daemonset/ sets (or shows, commented out) before
// config.hpp may read them: they arrive with the program's node-aware mode. Once Settings()
// lists one, it is checked like every other setting.
bool NodeAwareSetting(const std::string& env) { return env == "NODE_NAME" || env == "ALLOWED_PV_DIRS"; }

// What a workload's pod must get right for the program: every env var is one the program
// reads, with a value it accepts; PV_DIR is a hostPath mounted at the same path, with
// HostToContainer propagation; the probes hit the endpoint the program serves; the pod runs
// as the ServiceAccount of `rbac_file`.
void CheckProvisionerPod(const picojson::value& workload, const std::string& rbac_file) {
  const picojson::value& spec = workload.get("spec");
  // selector matches the template's labels
  for (const auto& [k, v] : spec.get("selector").get("matchLabels").get<picojson::object>())
    CHECK(Str(spec.get("template").get("metadata").get("labels").get(k)) == Str(v));
  const picojson::value& pod = spec.get("template").get("spec");
  REQUIRE(pod.get("containers").get<picojson::array>().size() == 1);
  const picojson::value& c = pod.get("containers").get(0);
  CHECK(Str(c.get("imagePullPolicy")) == "IfNotPresent");
  CHECK_FALSE(Str(c.get("image")).empty());

  std::map<std::string, std::string> env = EnvOf(c);
  std::string pv_dir = env.count("PV_DIR") ? env["PV_DIR"] : kDefaultPvDir;
  // Every env var the manifest sets is one the program reads, with a valid value.
  std::map<std::string, std::string> known;
  for (const Setting& s : Settings())
    if (*s.env) known[s.env] = s.flag;
  Result<Config> cfg = ParseConfig({}, [&env](const char* n) -> const char* {
    static const std::string node = "node-1";  // what spec.nodeName gives
    auto it = env.find(n);
    if (it == env.end()) return nullptr;
    return it->second == "fieldRef:spec.nodeName" ? node.c_str() : it->second.c_str();
  });
  REQUIRE(cfg.ok());
  for (const auto& [name, value] : env) {
    INFO(name);
    CHECK((known.count(name) == 1 || NodeAwareSetting(name)));
    if (value.rfind("fieldRef:", 0) == 0) CHECK(value == "fieldRef:spec.nodeName");  // the only one used
    CHECK(value != "valueFrom");
  }

  std::string volume_name, propagation;
  for (const auto& m : c.get("volumeMounts").get<picojson::array>())
    if (Str(m.get("mountPath")) == pv_dir) {
      volume_name = Str(m.get("name"));
      propagation = Str(m.get("mountPropagation"));
    }
  INFO("PV_DIR " << pv_dir);
  REQUIRE_FALSE(volume_name.empty());
  // Mounts made on the host inside volume directories are seen, so removal leaves them alone.
  CHECK(propagation == "HostToContainer");
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
  CHECK(Str(c.get("readinessProbe").get("httpGet").get("port")) == port_name);
  auto rbac = Docs(rbac_file);
  const picojson::value* sa = Find(rbac, "ServiceAccount");
  REQUIRE(sa);
  CHECK(Str(pod.get("serviceAccountName")) == Str(sa->get("metadata").get("name")));
  CHECK(Str(workload.get("metadata").get("namespace")) == Str(sa->get("metadata").get("namespace")));
}

// (API group, resource, verb) of every rule of the ClusterRole in `rbac_file`. A rule naming
// resourceNames, nonResourceURLs or "*" fails the test: none is needed.
// What the Role of `rbac_file` in `ns` grants on leases: verb -> the Lease names it is
// limited to ("*" for a rule without resourceNames: every lease of the namespace).
std::map<std::string, std::set<std::string>> LeaseGrants(const std::string& rbac_file, const std::string& ns) {
  std::map<std::string, std::set<std::string>> out;
  for (const picojson::value& d : Docs(rbac_file)) {
    if (Str(d.get("kind")) != "Role" || Str(d.get("metadata").get("namespace")) != ns) continue;
    for (const picojson::value& rule : d.get("rules").get<picojson::array>()) {
      if (rule.get("resources").serialize().find("\"leases\"") == std::string::npos) continue;
      std::set<std::string> names;
      if (rule.contains("resourceNames"))
        for (const auto& n : rule.get("resourceNames").get<picojson::array>()) names.insert(Str(n));
      else
        names.insert("*");
      for (const auto& v : rule.get("verbs").get<picojson::array>()) out[Str(v)].insert(names.begin(), names.end());
    }
  }
  return out;
}

std::set<std::tuple<std::string, std::string, std::string>> ClusterRoleGrants(const std::string& rbac_file) {
  std::set<std::tuple<std::string, std::string, std::string>> out;
  auto docs = Docs(rbac_file);
  const picojson::value* role = Find(docs, "ClusterRole");
  REQUIRE(role);
  for (const auto& rule : role->get("rules").get<picojson::array>()) {
    CHECK_FALSE(rule.contains("resourceNames"));
    CHECK_FALSE(rule.contains("nonResourceURLs"));
    for (const auto& g : rule.get("apiGroups").get<picojson::array>())
      for (const auto& r : rule.get("resources").get<picojson::array>())
        for (const auto& v : rule.get("verbs").get<picojson::array>()) {
          CHECK(Str(g) != "*");
          CHECK(Str(r) != "*");
          CHECK(Str(v) != "*");
          out.emplace(Str(g), Str(r), Str(v));
        }
  }
  return out;
}

// Whether kubectl is installed; if not, the tests that run it only warn.
bool HaveKubectl() {
  if (std::system("command -v kubectl >/dev/null 2>&1") == 0) return true;
  WARN("kubectl not installed: not checked with kubectl");
  return false;
}

// A stand-in for kube-apiserver's discovery, on loopback plain HTTP: all that
// `kubectl create --dry-run=client --validate=false` asks a server, to map each kind to its
// resource. The lists are what kube-apiserver serves for these kinds (names, scope).
class Discovery {
 public:
  Discovery() {
    struct Type {
      const char* path;  // discovery path of the group/version
      const char* plural;
      const char* kind;
      bool namespaced;
    };
    static const Type types[] = {
        {"/api/v1", "serviceaccounts", "ServiceAccount", true},
        {"/apis/apps/v1", "daemonsets", "DaemonSet", true},
        {"/apis/apps/v1", "deployments", "Deployment", true},
        {"/apis/rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole", false},
        {"/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", "ClusterRoleBinding", false},
        {"/apis/rbac.authorization.k8s.io/v1", "roles", "Role", true},
        {"/apis/rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding", true},
        {"/apis/storage.k8s.io/v1", "storageclasses", "StorageClass", false},
        {"/apis/coordination.k8s.io/v1", "leases", "Lease", true},
        {"/apis/storage.k8s.io/v1", "csidrivers", "CSIDriver", false},
    };
    std::map<std::string, picojson::array> lists;
    for (const Type& t : types) {
      picojson::object r;
      r["name"] = picojson::value(t.plural);
      r["singularName"] = picojson::value("");
      r["namespaced"] = picojson::value(t.namespaced);
      r["kind"] = picojson::value(t.kind);
      picojson::array verbs;
      for (const char* v : {"create", "delete", "get", "list", "patch", "update", "watch"}) verbs.emplace_back(v);
      r["verbs"] = picojson::value(verbs);
      lists[t.path].emplace_back(r);
    }
    picojson::array groups;
    for (const auto& [path, resources] : lists) {
      std::string gv = path == "/api/v1" ? "v1" : path.substr(std::strlen("/apis/"));
      picojson::object list;
      list["kind"] = picojson::value("APIResourceList");
      list["apiVersion"] = picojson::value("v1");
      list["groupVersion"] = picojson::value(gv);
      list["resources"] = picojson::value(resources);
      bodies_[path] = picojson::value(list).serialize();
      if (path == "/api/v1") continue;
      picojson::object version, group;
      version["groupVersion"] = picojson::value(gv);
      version["version"] = picojson::value("v1");
      group["name"] = picojson::value(gv.substr(0, gv.find('/')));
      group["versions"] = picojson::value(picojson::array{picojson::value(version)});
      group["preferredVersion"] = picojson::value(version);
      groups.emplace_back(group);
    }
    bodies_["/api"] = R"({"kind":"APIVersions","versions":["v1"],)"
                      R"("serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1"}]})";
    picojson::object group_list;
    group_list["kind"] = picojson::value("APIGroupList");
    group_list["apiVersion"] = picojson::value("v1");
    group_list["groups"] = picojson::value(groups);
    bodies_["/apis"] = picojson::value(group_list).serialize();

    server_.Get(".*", [this](const httplib::Request& req, httplib::Response& res) {
      auto it = bodies_.find(req.path);
      if (it == bodies_.end()) {
        res.status = 404;
        res.set_content(R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404})",
                        "application/json");
        return;
      }
      res.set_content(it->second, "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");  // listening from here on
    serving_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Discovery() {
    server_.stop();
    serving_.join();
  }
  int port() const { return port_; }

 private:
  std::map<std::string, std::string> bodies_;
  httplib::Server server_;
  int port_ = -1;
  std::thread serving_;
};

// `kubectl create --dry-run=client -f dir`: IdOf the objects kubectl would create, in its order
// (the test fails, showing kubectl's errors, if it fails). --validate=false: no OpenAPI schema
// is served to validate against.
std::vector<std::string> KubectlCreateDryRun(const std::string& dir) {
  Discovery api;
  REQUIRE(api.port() > 0);
  std::string tmp = "/tmp/hp-kubectl-" + std::to_string(::getpid());
  std::string cmd = "kubectl --kubeconfig=/dev/null --server=http://127.0.0.1:" + std::to_string(api.port()) +
                    " --cache-dir=" + tmp + "-cache --request-timeout=20s create --dry-run=client --validate=false -f " +
                    dir + " -o yaml > " + tmp + ".yaml 2> " + tmp + ".err";
  int rc = std::system(cmd.c_str());
  std::string out = Read(tmp + ".yaml"), err = Read(tmp + ".err");
  std::string cleanup = "rm -rf " + tmp + "-cache " + tmp + ".yaml " + tmp + ".err";
  int cleaned = std::system(cleanup.c_str());
  (void)cleaned;
  INFO(cmd << "\n" << err);
  REQUIRE(rc == 0);
  Result<std::vector<picojson::value>> docs = ParseYamlDocuments(out);  // one document per object
  REQUIRE(docs.ok());
  std::vector<std::string> ids;
  for (const picojson::value& d : *docs) ids.push_back(IdOf(d));
  return ids;
}

}  // namespace

TEST_CASE("the install is exactly the manifests, each object has apiVersion, kind and a valid name", "[manifests]") {
  // No claim or pod among them: the examples are not installed by `kubectl create -f manifests/`.
  // Nor anything of manifests/daemonset/: kubectl -f does not read subfolders (without -R).
  CHECK(KubectlReads("manifests") == std::vector<std::string>(std::begin(kInstalled), std::end(kInstalled)));
  CHECK(CheckObjects(KubectlReads("manifests")) == 8);
  for (const std::string& f : KubectlReads("manifests"))
    for (const picojson::value& d : Docs(f)) {
      INFO(f);
      CHECK(Str(d.get("kind")) != "PersistentVolumeClaim");
      CHECK(Str(d.get("kind")) != "Pod");
      CHECK(Str(d.get("kind")) != "DaemonSet");
    }
}

TEST_CASE("the node-aware install is exactly manifests/daemonset/: nine objects, no kustomization among them", "[manifests]") {
  CHECK(KubectlReads("manifests/daemonset") ==
        std::vector<std::string>(std::begin(kInstalledDaemonSet), std::end(kInstalledDaemonSet)));
  CHECK(CheckObjects(KubectlReads("manifests/daemonset")) == 9);
  CHECK(Sorted(ObjectIds(KubectlReads("manifests/daemonset"))) ==
        Sorted({"CSIDriver hostpath.hostpath-provisioner.io", "ClusterRole hostpath-provisioner",
                "ClusterRoleBinding hostpath-provisioner",
                "DaemonSet kube-system/hostpath-provisioner", "ServiceAccount kube-system/hostpath-provisioner",
                "Lease kube-system/hostpath-provisioner.io-hostpath-dispatch", "Role kube-system/hostpath-provisioner",
                "RoleBinding kube-system/hostpath-provisioner", "StorageClass hostpath"}));
}

TEST_CASE("the two installs share the names of their ServiceAccount, ClusterRole, ClusterRoleBinding and StorageClass",
          "[manifests]") {
  // So that creating one over the other fails (AlreadyExists) rather than running two
  // provisioners for one class: every object of the node-aware install but its DaemonSet is
  // also one of the single-node install.
  std::vector<std::string> single = ObjectIds(KubectlReads("manifests"));
  std::vector<std::string> node_aware = ObjectIds(KubectlReads("manifests/daemonset"));
  for (const std::string& id : node_aware) {
    INFO(id);
    // The dispatch Lease and the CSIDriver are its own.
    if (id.rfind("DaemonSet ", 0) == 0 || id.rfind("Lease ", 0) == 0 || id.rfind("CSIDriver ", 0) == 0) continue;
    CHECK(std::count(single.begin(), single.end(), id) == 1);
  }
  // The ServiceAccount both workloads run as is that one.
  auto dep_docs = Docs("manifests/deployment.yaml");
  auto ds_docs = Docs("manifests/daemonset/daemonset.yaml");
  const picojson::value* dep = Find(dep_docs, "Deployment");
  const picojson::value* ds = Find(ds_docs, "DaemonSet");
  REQUIRE(dep);
  REQUIRE(ds);
  CHECK(Str(ds->get("metadata").get("name")) == Str(dep->get("metadata").get("name")));
  CHECK(Str(ds->get("spec").get("template").get("spec").get("serviceAccountName")) ==
        Str(dep->get("spec").get("template").get("spec").get("serviceAccountName")));
}

TEST_CASE("the examples parse: a claim, a pod that mounts it and a clone of it", "[manifests]") {
  CHECK(CheckObjects(std::vector<std::string>(std::begin(kExamples), std::end(kExamples))) == 3);
  auto claim = Docs("examples/test-claim.yaml");
  auto pod = Docs("examples/test-pod.yaml");
  auto clone = Docs("examples/clone-claim.yaml");
  REQUIRE(Find(claim, "PersistentVolumeClaim"));
  REQUIRE(Find(pod, "Pod"));
  REQUIRE(Find(clone, "PersistentVolumeClaim"));
  const picojson::value* source = Find(claim, "PersistentVolumeClaim");
  const picojson::value& volume = Find(pod, "Pod")->get("spec").get("volumes").get(0);
  CHECK(Str(volume.get("persistentVolumeClaim").get("claimName")) == Str(source->get("metadata").get("name")));
  // The clone: of the example claim, in its namespace and class, at least its size.
  const picojson::value& spec = Find(clone, "PersistentVolumeClaim")->get("spec");
  CHECK(Str(spec.get("dataSource").get("kind")) == "PersistentVolumeClaim");
  CHECK(Str(spec.get("dataSource").get("name")) == Str(source->get("metadata").get("name")));
  CHECK(Str(Find(clone, "PersistentVolumeClaim")->get("metadata").get("namespace")) == Str(source->get("metadata").get("namespace")));
  CHECK(Str(spec.get("storageClassName")) == Str(source->get("spec").get("storageClassName")));
  CHECK(Str(spec.get("resources").get("requests").get("storage")) ==
        Str(source->get("spec").get("resources").get("requests").get("storage")));
  // Small: "Try it" makes both on a root that may have little free space.
  CHECK(Str(source->get("spec").get("resources").get("requests").get("storage")) == "64Mi");
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
  CHECK(sc->get("allowVolumeExpansion").get<bool>());  // the provisioner expands its volumes
  auto claim = Docs("examples/test-claim.yaml");
  REQUIRE(Find(claim, "PersistentVolumeClaim"));
  CHECK(Str(Find(claim, "PersistentVolumeClaim")->get("spec").get("storageClassName")) == Str(sc->get("metadata").get("name")));
}

TEST_CASE("the node-aware StorageClass waits for the first consumer, names the capacity provisioner and deletes", "[manifests]") {
  auto docs = Docs("manifests/daemonset/storageclass.yaml");
  REQUIRE(docs.size() == 1);  // the second class is a commented example
  const picojson::value* sc = Find(docs, "StorageClass");
  REQUIRE(sc);
  CHECK(Str(sc->get("metadata").get("name")) == "hostpath");
  // The DaemonSet's second name, which a CSIDriver with storageCapacity carries: the scheduler
  // places its claims' pods by the capacity the instances publish.
  auto ds_docs = Docs("manifests/daemonset/daemonset.yaml");
  const picojson::value* ds = Find(ds_docs, "DaemonSet");
  REQUIRE(ds);
  std::map<std::string, std::string> env = EnvOf(ds->get("spec").get("template").get("spec").get("containers").get(0));
  CHECK(env["PROVISIONER_NAME"] == kDefaultProvisionerName);
  CHECK(Str(sc->get("provisioner")) == env["CAPACITY_PROVISIONER_NAME"]);
  auto driver_docs = Docs("manifests/daemonset/csidriver.yaml");
  const picojson::value* driver = Find(driver_docs, "CSIDriver");
  REQUIRE(driver);
  CHECK(Str(driver->get("apiVersion")) == "storage.k8s.io/v1");
  CHECK(Str(driver->get("metadata").get("name")) == env["CAPACITY_PROVISIONER_NAME"]);
  CHECK(driver->get("spec").get("storageCapacity").get<bool>());
  CHECK_FALSE(driver->get("spec").get("attachRequired").get<bool>());  // no CSI attach for hostPath/local volumes
  CHECK_FALSE(driver->get("spec").get("podInfoOnMount").get<bool>());
  CHECK(sc->get("allowVolumeExpansion").get<bool>());
  // The scheduler picks the node (the pod's) and writes it into the claim: no annotation needed.
  CHECK(Str(sc->get("volumeBindingMode")) == "WaitForFirstConsumer");
  CHECK(Str(sc->get("reclaimPolicy")) == "Delete");
  CHECK_FALSE(sc->contains("parameters"));
  // The example claim asks for it too.
  auto claim = Docs("examples/test-claim.yaml");
  REQUIRE(Find(claim, "PersistentVolumeClaim"));
  CHECK(Str(Find(claim, "PersistentVolumeClaim")->get("spec").get("storageClassName")) == Str(sc->get("metadata").get("name")));

  // The commented example of a class with its own root names a folder that daemonset.yaml's
  // commented example allows (ALLOWED_PV_DIRS) and mounts at the same host path.
  std::string sc_text = Read("manifests/daemonset/storageclass.yaml");
  std::string ds_text = Read("manifests/daemonset/daemonset.yaml");
  size_t at = sc_text.find("#   pvDir: ");
  REQUIRE(at != std::string::npos);
  at += std::strlen("#   pvDir: ");
  std::string dir = sc_text.substr(at, sc_text.find('\n', at) - at);
  INFO("pvDir " << dir);
  CHECK(dir.rfind("/", 0) == 0);
  CHECK(dir != kDefaultPvDir);
  CHECK(sc_text.find("#   volumeType: local\n") != std::string::npos);
  size_t allowed = ds_text.find("# - name: ALLOWED_PV_DIRS\n");
  REQUIRE(allowed != std::string::npos);
  CHECK(ds_text.find("#   value: " + dir + "\n", allowed) != std::string::npos);
  CHECK(ds_text.find("#   mountPath: " + dir + "\n") != std::string::npos);
  CHECK(ds_text.find("#     path: " + dir + "\n") != std::string::npos);
}

TEST_CASE("the Deployment mounts the PV_DIR it passes, at the same host path, and probes our endpoint", "[manifests]") {
  auto docs = Docs("manifests/deployment.yaml");
  const picojson::value* dep = Find(docs, "Deployment");
  REQUIRE(dep);
  const picojson::value& spec = dep->get("spec");
  CHECK(spec.get("replicas").get<double>() == 1);
  CHECK(Str(spec.get("strategy").get("type")) == "Recreate");
  CheckProvisionerPod(*dep, "manifests/rbac.yaml");
  // Single-node mode: leader election, no node name.
  std::map<std::string, std::string> env = EnvOf(spec.get("template").get("spec").get("containers").get(0));
  CHECK(env["LEADER_ELECT"] == "true");
  CHECK(env.count("NODE_NAME") == 0);
  CHECK(env.count("ALLOWED_PV_DIRS") == 0);
}

TEST_CASE("the install makes, before the Deployment, the empty Lease its pod elects with, which its Role may take over",
          "[manifests]") {
  // So that an uninstall deletes the old pod's lease and an install right after need not wait
  // for it (e2e_shutdown.cpp); first, so that no pod can have made it before kubectl does.
  auto docs = Docs("manifests/deployment.yaml");
  REQUIRE(docs.size() == 2);
  const picojson::value& lease = docs[0];
  REQUIRE(Str(lease.get("kind")) == "Lease");
  CHECK(Str(lease.get("apiVersion")) == "coordination.k8s.io/v1");
  CHECK_FALSE(lease.get("spec").is<picojson::object>());  // no holder: the first pod takes it at once
  const picojson::value& dep = docs[1];
  std::map<std::string, std::string> env = EnvOf(dep.get("spec").get("template").get("spec").get("containers").get(0));
  CHECK(env.count("LEADER_ELECT_NAMESPACE") == 0);  // the service account's namespace: the Deployment's
  CHECK(Str(lease.get("metadata").get("namespace")) == Str(dep.get("metadata").get("namespace")));
  CHECK(Str(lease.get("metadata").get("name")) == LeaseNameFor(env["PROVISIONER_NAME"]));
  // The Role lets the pod read it and take it over, in that namespace, and no other Lease (the
  // scheduler's and the controller-manager's are in kube-system too); create, which RBAC
  // cannot limit by name, makes it again if it is deleted.
  const std::set<std::string> only = {Str(lease.get("metadata").get("name"))};
  CHECK(LeaseGrants("manifests/rbac.yaml", Str(dep.get("metadata").get("namespace"))) ==
        std::map<std::string, std::set<std::string>>{{"get", only}, {"update", only}, {"create", {"*"}}});
}

TEST_CASE("the DaemonSet runs one node-aware instance per node: NODE_NAME from spec.nodeName, no leader election",
          "[manifests]") {
  auto docs = Docs("manifests/daemonset/daemonset.yaml");
  REQUIRE(docs.size() == 2);
  const picojson::value* ds = Find(docs, "DaemonSet");
  REQUIRE(ds);
  // First, the empty Lease the instances elect their claim dispatcher with, in their namespace.
  const picojson::value& lease = docs[0];
  REQUIRE(Str(lease.get("kind")) == "Lease");
  CHECK_FALSE(lease.get("spec").is<picojson::object>());
  CHECK(Str(lease.get("metadata").get("namespace")) == Str(ds->get("metadata").get("namespace")));
  std::map<std::string, std::string> ds_env = EnvOf(ds->get("spec").get("template").get("spec").get("containers").get(0));
  CHECK(Str(lease.get("metadata").get("name")) == LeaseNameFor(ds_env["PROVISIONER_NAME"]) + "-dispatch");
  CHECK(Str(ds->get("apiVersion")) == "apps/v1");
  const picojson::value& spec = ds->get("spec");
  // One node at a time, and never two instances on one node (a surge would run a second
  // instance for the same node next to the old one).
  CHECK(Str(spec.get("updateStrategy").get("type")) == "RollingUpdate");
  const picojson::value& surge = spec.get("updateStrategy").get("rollingUpdate").get("maxSurge");
  CHECK((surge.is<picojson::null>() || (surge.is<double>() && surge.get<double>() == 0) || Str(surge) == "0" ||
         Str(surge) == "0%"));
  CheckProvisionerPod(*ds, "manifests/daemonset/rbac.yaml");

  const picojson::value& c = spec.get("template").get("spec").get("containers").get(0);
  std::map<std::string, std::string> env = EnvOf(c);
  CHECK(env["NODE_NAME"] == "fieldRef:spec.nodeName");
  // The program refuses LEADER_ELECT with NODE_NAME; no Lease is granted either.
  for (const auto& [name, value] : env) {
    INFO(name);
    CHECK(name.rfind("LEADER_ELECT", 0) == std::string::npos);
  }
  CHECK(env["PROVISIONER_NAME"] == kDefaultProvisionerName);
}

TEST_CASE("the DaemonSet's pod is the Deployment's but for the environment and the priority class", "[manifests]") {
  // Modelled on it: the same image, probes, ports, resources, security, PV_DIR volume and
  // tolerations, so that a change to one that is not made to the other fails here.
  auto dep_docs = Docs("manifests/deployment.yaml");
  auto ds_docs = Docs("manifests/daemonset/daemonset.yaml");
  const picojson::value* dep = Find(dep_docs, "Deployment");
  const picojson::value* ds = Find(ds_docs, "DaemonSet");
  REQUIRE(dep);
  REQUIRE(ds);
  picojson::value a = dep->get("spec").get("template");
  picojson::value b = ds->get("spec").get("template");
  for (picojson::value* t : {&a, &b}) {
    picojson::object& pod = t->get<picojson::object>()["spec"].get<picojson::object>();
    CHECK(Str(pod["priorityClassName"]).rfind("system-", 0) == 0);  // critical, in kube-system
    pod.erase("priorityClassName");
    pod["containers"].get<picojson::array>()[0].get<picojson::object>().erase("env");
  }
  CHECK(a.serialize(true) == b.serialize(true));
}

TEST_CASE("the node-aware RBAC grants exactly what that mode asks: base's ClusterRole plus patching and getting claims, getting and counting nodes, getting CSIDrivers, its Lease and its capacity objects",
          "[manifests]") {
  using Grant = std::tuple<std::string, std::string, std::string>;
  std::set<Grant> expected = {
      {"", "persistentvolumeclaims", "list"},  {"", "persistentvolumeclaims", "watch"},
      {"", "persistentvolumeclaims", "patch"},  // removes volume.kubernetes.io/selected-node; the node label
      {"", "persistentvolumeclaims", "get"},    // the claim a clone copies, when another node's
      {"", "persistentvolumeclaims/status", "patch"},  // expansion: Resizing, then the new capacity
      {"", "persistentvolumes", "get"},        {"", "persistentvolumes", "list"},
      {"", "persistentvolumes", "watch"},      {"", "persistentvolumes", "create"},
      {"", "persistentvolumes", "delete"},     {"", "persistentvolumes", "patch"},
      {"storage.k8s.io", "storageclasses", "list"}, {"storage.k8s.io", "storageclasses", "watch"},
      {"", "events", "create"},                {"", "events", "patch"},
      {"", "nodes", "get"},  // does a node holding a finalizer on a volume on every node still exist? its uid
      {"", "nodes", "list"},  // one at a time: the dispatcher counts the nodes (SMALL_CLUSTER_NODES)
      {"storage.k8s.io", "csidrivers", "get"},  // does the scheduler read the capacity published?
  };
  CHECK(ClusterRoleGrants("manifests/daemonset/rbac.yaml") == expected);
  // That is the single-node ClusterRole, plus the claim patch and get, the node get and list,
  // and the CSIDriver get.
  std::set<Grant> base = ClusterRoleGrants("manifests/rbac.yaml");
  base.emplace("", "persistentvolumeclaims", "patch");
  base.emplace("", "persistentvolumeclaims", "get");
  base.emplace("", "nodes", "get");
  base.emplace("", "nodes", "list");
  base.emplace("storage.k8s.io", "csidrivers", "get");
  CHECK(base == expected);

  // The Role grants the dispatch Lease only, in the ServiceAccount's namespace (as base's);
  // the binding gives the ClusterRole to the ServiceAccount.
  auto docs = Docs("manifests/daemonset/rbac.yaml");
  std::vector<std::string> kinds;
  for (const auto& d : docs) kinds.push_back(Str(d.get("kind")));
  CHECK(kinds == std::vector<std::string>{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"});
  const picojson::value* role = Find(docs, "Role");
  REQUIRE(role);
  CHECK(Str(role->get("metadata").get("namespace")) == "kube-system");
  // get and update of that Lease alone (not every lease of kube-system); create, which RBAC
  // cannot limit by name, in a rule of its own.
  CHECK(role->get("rules").serialize() ==
        R"([{"apiGroups":["coordination.k8s.io"],"resourceNames":["hostpath-provisioner.io-hostpath-dispatch"],"resources":["leases"],"verbs":["get","update"]},)"
        R"({"apiGroups":["coordination.k8s.io"],"resources":["leases"],"verbs":["create"]},)"
        // Its node's CSIStorageCapacity objects, in this namespace only (no get nor watch: it
        // lists them once, by their label, and keeps what it wrote).
        R"({"apiGroups":["storage.k8s.io"],"resources":["csistoragecapacities"],"verbs":["list","create","update","delete"]}])");
  const std::set<std::string> only = {LeaseNameFor(kDefaultProvisionerName) + "-dispatch"};
  CHECK(LeaseGrants("manifests/daemonset/rbac.yaml", "kube-system") ==
        std::map<std::string, std::set<std::string>>{{"get", only}, {"update", only}, {"create", {"*"}}});
  const picojson::value* binding = Find(docs, "ClusterRoleBinding");
  const picojson::value* sa = Find(docs, "ServiceAccount");
  REQUIRE(binding);
  REQUIRE(sa);
  CHECK(Str(binding->get("roleRef").get("kind")) == "ClusterRole");
  CHECK(Str(binding->get("roleRef").get("name")) == Str(Find(docs, "ClusterRole")->get("metadata").get("name")));
  REQUIRE(binding->get("subjects").get<picojson::array>().size() == 1);
  const picojson::value& subject = binding->get("subjects").get(0);
  CHECK(Str(subject.get("kind")) == "ServiceAccount");
  CHECK(Str(subject.get("name")) == Str(sa->get("metadata").get("name")));
  CHECK(Str(subject.get("namespace")) == Str(sa->get("metadata").get("namespace")));
}

TEST_CASE("kustomize renders the base, the example overlay (which changes PV_DIR everywhere), the node-aware install and the quota overlays",
          "[manifests]") {
  if (!HaveKubectl()) return;
  // Each renders the objects `kubectl create -f` would create from the same folder.
  std::map<std::string, std::vector<std::string>> dirs = {
      {"manifests", ObjectIds(KubectlReads("manifests"))},
      {"manifests/overlays/example", ObjectIds(KubectlReads("manifests"))},
      {"manifests/daemonset", ObjectIds(KubectlReads("manifests/daemonset"))},
      {"manifests/overlays/quota", ObjectIds(KubectlReads("manifests"))},
      {"manifests/overlays/quota-daemonset", ObjectIds(KubectlReads("manifests/daemonset"))},
  };
  for (const auto& [dir, objects] : dirs) {
    std::string out = "/tmp/hp-kustomize-" + std::to_string(::getpid()) + ".yaml";
    std::string cmd = "kubectl kustomize " + dir + " > " + out + " 2>&1";
    INFO(cmd);
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::string rendered = Read(out);
    CHECK(Sorted(ObjectIds({out})) == Sorted(objects));  // no example, nothing of the other install
    std::remove(out.c_str());
    // The quota overlays add SYS_ADMIN, which nothing else has.
    CHECK((rendered.find("- SYS_ADMIN") != std::string::npos) == (dir.find("quota") != std::string::npos));
    if (dir == "manifests/overlays/example") {
      CHECK(rendered.find("/var/kubernetes") == std::string::npos);
      CHECK(rendered.find("/srv/volumes") != std::string::npos);
    }
  }
}

TEST_CASE("kubectl create -f reads the objects expected from each folder, and nothing of the other install",
          "[manifests]") {
  if (!HaveKubectl()) return;
  // Only discovery is asked of a server (to map kinds to resources); nothing is sent.
  CHECK(KubectlCreateDryRun("manifests/") ==
        std::vector<std::string>{"Lease kube-system/hostpath-provisioner.io-hostpath",
                                 "Deployment kube-system/hostpath-provisioner", "ServiceAccount kube-system/hostpath-provisioner",
                                 "ClusterRole hostpath-provisioner", "ClusterRoleBinding hostpath-provisioner",
                                 "Role kube-system/hostpath-provisioner", "RoleBinding kube-system/hostpath-provisioner",
                                 "StorageClass hostpath"});
  CHECK(KubectlCreateDryRun("manifests/daemonset/") ==
        std::vector<std::string>{"CSIDriver hostpath.hostpath-provisioner.io",
                                 "Lease kube-system/hostpath-provisioner.io-hostpath-dispatch",
                                 "DaemonSet kube-system/hostpath-provisioner", "ServiceAccount kube-system/hostpath-provisioner",
                                 "ClusterRole hostpath-provisioner", "ClusterRoleBinding hostpath-provisioner",
                                 "Role kube-system/hostpath-provisioner", "RoleBinding kube-system/hostpath-provisioner",
                                 "StorageClass hostpath"});
}

TEST_CASE("the optional classes in manifests/classes/ are ours and their parameters are accepted where they are meant to run",
          "[manifests]") {
  struct Row {
    const char* file;
    const char* name;
    std::map<std::string, std::string> env;
  } rows[] = {
      {"manifests/classes/every-node.yaml", "hostpath-every-node", {{"NODE_NAME", "node-a"}}},
      {"manifests/classes/network-share.yaml", "hostpath-share", {{"ALLOWED_PV_DIRS", "/mnt/share"}}},
      {"manifests/classes/enforced-size.yaml", "hostpath-enforced", {}},
      {"manifests/classes/keep-data.yaml", "hostpath-keep", {}},
  };
  for (const Row& r : rows) {
    INFO(r.file);
    auto docs = Docs(r.file);
    REQUIRE(docs.size() == 1);
    const picojson::value& sc = docs[0];
    CHECK(Str(sc.get("kind")) == "StorageClass");
    CHECK(Str(sc.get("metadata").get("name")) == r.name);
    CHECK(Str(sc.get("provisioner")) == kDefaultProvisionerName);
    StorageClass cls;
    cls.meta.name = r.name;
    cls.provisioner = Str(sc.get("provisioner"));
    for (const auto& [k, v] : sc.get("parameters").get<picojson::object>()) cls.parameters[k] = v.to_str();
    Result<Config> cfg = ParseConfig({}, [&](const char* name) -> const char* {
      auto it = r.env.find(name);
      return it == r.env.end() ? nullptr : it->second.c_str();
    });
    REQUIRE(cfg.ok());
    ClassParameters params;
    CHECK(ParseClassParameters(*cfg, cls, &params).empty());
  }
  // The share's class says what its comments say: that root, and a mount required.
  Result<Config> cfg = ParseConfig({}, [](const char* name) -> const char* {
    return std::string(name) == "ALLOWED_PV_DIRS" ? "/mnt/share" : nullptr;
  });
  REQUIRE(cfg.ok());
  StorageClass share;
  share.parameters = {{"pvDir", "/mnt/share"}, {"requireMount", "true"}};
  ClassParameters params;
  REQUIRE(ParseClassParameters(*cfg, share, &params).empty());
  CHECK(params.root == "/mnt/share");
  CHECK(params.require_mount);
  CHECK(Read("manifests/classes/network-share.yaml").find("value: /mnt/share") != std::string::npos);
}
