// The bodies of fake_apiserver.hpp (the contracts are there).
#include "test/fake/fake_apiserver.hpp"

#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

namespace fake {

namespace {

Status WriteFileAtomic(const std::string& path, const std::string& content, mode_t mode = 0644) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return Status::Error("cannot write " + tmp);
    out << content;
    if (!out.flush()) return Status::Error("cannot write " + tmp);
  }
  chmod(tmp.c_str(), mode);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return Status::Error("cannot rename " + tmp + " to " + path);
  return Status::Ok();
}

// mkdir -p.
Status MakeDirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i < path.size() && path[i] != '/') continue;
    std::string prefix = path.substr(0, i);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return Status::Error("cannot create " + prefix);
  }
  return Status::Ok();
}

// A JSON string literal.
std::string Quote(const std::string& s) { return ToText(Json(s)); }

std::string Kubeconfig(const std::string& server, const std::string& ca, const std::string& user,
                              const std::string& credential) {
  return "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: " + server +
         "\n    certificate-authority: " + ca + "\nusers:\n- name: " + user + "\n  user:\n    " + credential +
         "\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: " + user +
         "\n    namespace: default\ncurrent-context: fake\n";
}

std::string Hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) out += std::string{d[c >> 4], d[c & 15]};
  return out;
}
// The bytes of a Hex string; false (and `err` says where) for anything else.
bool Unhex(const std::string& s, std::string& out, std::string& err) {
  auto digit = [](char c) { return c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= '0' && c <= '9' ? c - '0' : -1; };
  out.clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (digit(s[i]) < 0) return err = "illegal data at input byte " + std::to_string(i), false;
  }
  if (s.size() % 2 != 0) return err = "illegal data at input byte " + std::to_string(s.size()), false;
  for (size_t i = 0; i < s.size(); i += 2) out += static_cast<char>(digit(s[i]) * 16 + digit(s[i + 1]));
  return true;
}

// The error strconv.ParseUint(s, 10, 64) gives, or "".
std::string ParseUintError(const std::string& s) {
  std::string head = "strconv.ParseUint: parsing " + Quote(s) + ": ";
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return head + "invalid syntax";
  uint64_t v = 0;
  for (char c : s) {
    if (v > (UINT64_MAX - (c - '0')) / 10) return head + "value out of range";
    v = v * 10 + (c - '0');
  }
  return "";
}

std::string RandomSuffix() {
  static const char* alphabet = "bcdfghjklmnpqrstvwxz2456789";  // apimachinery/pkg/util/rand
  unsigned char bytes[5];
  RAND_bytes(bytes, sizeof bytes);
  std::string out;
  for (unsigned char c : bytes) out += alphabet[c % 27];
  return out;
}

// The Status of a failed create/update for invalid objects (errors.go NewInvalid).
Json InvalidStatus(const ResourceType& t, const std::string& name, const std::vector<FieldError>& errs) {
  Details d;
  d.name = name;
  d.group = t.group;
  d.kind = t.kind;
  std::string list;
  for (const auto& e : errs) {
    JsonObject c;
    c["reason"] = Json(e.type);
    c["message"] = Json(e.body);
    c["field"] = Json(e.field);
    d.causes.emplace_back(c);
    list += (list.empty() ? "" : ", ") + e.Text();
  }
  std::string msg = t.QualifiedKind() + " \"" + name + "\" is invalid: " + (errs.size() == 1 ? list : "[" + list + "]");
  return StatusBody(422, "Invalid", msg, &d);
}

Details DetailsFor(const ResourceType& t, const std::string& name) {
  Details d;
  d.name = name;
  d.group = t.group;
  d.kind = t.plural;
  return d;
}

Json NotFoundStatus(const ResourceType& t, const std::string& name) {
  Details d = DetailsFor(t, name);
  return StatusBody(404, "NotFound", t.QualifiedResource() + " \"" + name + "\" not found", &d);
}

Json ConflictStatus(const ResourceType& t, const std::string& name, const std::string& why) {
  Details d = DetailsFor(t, name);
  return StatusBody(409, "Conflict",
                    "Operation cannot be fulfilled on " + t.QualifiedResource() + " \"" + name + "\": " + why, &d);
}

const char* kModified = "the object has been modified; please apply your changes to the latest version and try again";

Json BadRequest(const std::string& msg) { return StatusBody(400, "BadRequest", msg); }

Json ResourceList(const std::string& group_version, const std::string& group, const std::string& version) {
  JsonArray resources;
  for (const auto& t : ResourceTypes()) {
    if (t.group != group || t.version != version) continue;
    JsonObject r;
    r["name"] = Json(t.plural);
    r["singularName"] = Json(t.singular);
    r["namespaced"] = Json(t.namespaced);
    r["kind"] = Json(t.kind);
    r["verbs"] = StringArray({"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"});
    if (!t.short_names.empty()) r["shortNames"] = StringArray(t.short_names);
    resources.emplace_back(r);
    if (t.has_status) {
      JsonObject s;
      s["name"] = Json(t.plural + "/status");
      s["singularName"] = Json("");
      s["namespaced"] = Json(t.namespaced);
      s["kind"] = Json(t.kind);
      s["verbs"] = StringArray({"get", "patch", "update"});
      resources.emplace_back(s);
    }
  }
  JsonObject list;
  list["kind"] = Json("APIResourceList");
  list["apiVersion"] = Json("v1");
  list["groupVersion"] = Json(group_version);
  list["resources"] = Json(resources);
  return Json(list);
}

// One request record as a JSON object, t_ns as an exact integer; `extra` is appended inside.
std::string RecordJson(const RequestRecord& r, const std::string& extra) {
  std::string resource = r.subresource.empty() ? r.resource : r.resource + "/" + r.subresource;
  return "{\"t_ns\":" + std::to_string(r.t_ns) + ",\"user\":" + Quote(r.user) + ",\"verb\":" + Quote(r.verb) +
         ",\"resource\":" + Quote(resource) + ",\"namespace\":" + Quote(r.ns) + ",\"name\":" + Quote(r.name) +
         ",\"resourceVersion\":" + Quote(r.resource_version) + extra + "}";
}

}  // namespace

// A request being answered: dispatched at once, again when a pause or delay it waits for is
// over, and then, for a watch or /fake/wait, answered by the stream Dispatch made.
class ApiServer::Pending final : public Exchange {
 public:
  Pending(ApiServer& server, httplib::Request req) : server_(server), req_(std::move(req)) { progress_.rec.t_ns = NowNs(); }

  bool Step(std::string& out, Clock::time_point now, Clock::time_point& wake) override;
  bool FollowsStore() const override { return stream_ != nullptr; }

 private:
  ApiServer& server_;
  httplib::Request req_;
  Progress progress_;
  Clock::time_point again_{};
  bool until_unpaused_ = false;
  std::unique_ptr<Exchange> stream_;
};

std::string ApiServer::sa_token() const {
  std::lock_guard<std::mutex> l(auth_mu_);
  return sa_token_;
}

void ApiServer::AddFault(const Fault& f) {
  std::lock_guard<std::mutex> l(ctl_mu_);
  faults_.push_back(f);
}

void ApiServer::ClearFaults() {
  std::lock_guard<std::mutex> l(ctl_mu_);
  faults_.clear();
}

int ApiServer::ArmedFaults() {
  std::lock_guard<std::mutex> l(ctl_mu_);
  int n = 0;
  for (const Fault& f : faults_) n += f.count;
  return n;
}

void ApiServer::DropWatches() {
  {
    Store::Lock l(store_);
    ++watch_.generation;
  }
  WakeLoop();
}

void ApiServer::Compact() {
  {
    Store::Lock l(store_);
    store_.Compact();
  }
  WakeLoop();
}

void ApiServer::Pause(double seconds) {
  {
    Store::Lock l(store_);
    auto until = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
    watch_.paused_until_ns = until.time_since_epoch().count();
  }
  WakeLoop();
}

std::vector<RequestRecord> ApiServer::Requests() const {
  std::lock_guard<std::mutex> l(log_mu_);
  return requests_;
}

void ApiServer::ResetRequests() {
  std::lock_guard<std::mutex> l(log_mu_);
  requests_.clear();
  denials_.clear();
}

Json ApiServer::GetObject(const std::string& plural, const std::string& ns, const std::string& name) {
  Store::Lock l(store_);
  const Json* o = store_.Get(plural, ObjectKey(ns, name));
  return o ? *o : Json();
}

void ApiServer::RunControllers() {
  Store::Lock l(store_);
  for (bool more = true; more;) {
    const bool controllers = ctl_.Drain();
    const bool expander = expand_.Drain();
    const bool scheduler = sched_.Drain();
    const bool nodes = nodes_.Drain();
    more = controllers || expander || scheduler || nodes;
  }
}

ApiServer::Outcome ApiServer::Later(Clock::time_point t, bool until_unpaused) {
  Outcome o;
  o.again = t;
  o.until_unpaused = until_unpaused;
  return o;
}

ApiServer::Outcome ApiServer::Streamed(std::unique_ptr<Exchange> stream) {
  Outcome o;
  o.stream = std::move(stream);
  return o;
}

void ApiServer::WakeLoop() {
  if (loop_) loop_->Wake();
}

void ApiServer::Record(const RequestRecord& r) {
  std::lock_guard<std::mutex> l(log_mu_);
  requests_.push_back(r);
}

bool ApiServer::Pending::Step(std::string& out, Clock::time_point now, Clock::time_point& wake) {
  if (stream_) return stream_->Step(out, now, wake);
  if (until_unpaused_) again_ = server_.watch_.PausedUntil();
  if (now < again_) {
    wake = std::min(wake, again_);
    return false;
  }
  httplib::Response res;
  Outcome o = server_.Dispatch(req_, progress_, res);
  if (o.stream) {
    stream_ = std::move(o.stream);
    return stream_->Step(out, now, wake);
  }
  if (o.again != Clock::time_point()) {
    again_ = o.again;
    until_unpaused_ = o.until_unpaused;
    wake = std::min(wake, again_);
    return false;
  }
  AppendResponse(out, res);
  return true;
}

Status ApiServer::Start() {
  if (opts_.dir.empty()) return Status::Invalid("--dir is required");
  Status s = MakeDirs(opts_.dir + "/serviceaccount");
  if (!s.ok()) return s;
  char abs[PATH_MAX];
  if (realpath(opts_.dir.c_str(), abs) == nullptr) return Status::Error("cannot resolve " + opts_.dir);
  opts_.dir = abs;
  for (const auto& f : opts_.rbac_files) {
    s = rbac_.LoadFile(f);
    if (!s.ok()) return s;
    rbac_enabled_ = true;
  }
  auto pki = MakeTestPki();
  if (!pki.ok()) return pki.status();
  ca_pem_ = pki->ca_pem;
  admin_token_ = "admin-" + RandomHex(24);
  sa_token_ = "sa-" + RandomHex(24);
  admin_user_ = {"admin", {"system:masters", "system:authenticated"}};
  sa_user_ = {sa_user(), {"system:serviceaccounts", "system:serviceaccounts:" + opts_.sa_namespace, "system:authenticated"}};
  {  // the namespaces every cluster has
    Store::Lock l(store_);
    for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
      Json obj{JsonObject()};
      obj.get<JsonObject>()["kind"] = Json("Namespace");
      obj.get<JsonObject>()["apiVersion"] = Json("v1");
      Meta(obj)["name"] = Json(ns);
      InitMeta(obj);
      ApplyDefaults(TypeOf("namespaces"), obj);
      store_.Put("namespaces", obj);
    }
    // The watch cache starts with the server: it lists at the current resourceVersion, and a
    // watch from an older one is 410 Expired (watch_cache.go: oldest = listResourceVersion + 1).
    store_.Compact();
  }
  watch_.bookmark_seconds = opts_.bookmark_seconds;
  auto loop = std::make_unique<HttpsLoop>(
      [this](httplib::Request req) { return std::unique_ptr<Exchange>(std::make_unique<Pending>(*this, std::move(req))); },
      [this] { RunControllers(); }, HttpsLoop::Options());
  auto port = loop->Listen(pki->server_cert.get(), pki->server_key.get(), opts_.port);
  if (!port.ok()) return port.status();
  port_ = *port;
  s = WriteFiles();
  if (!s.ok()) return s;
  loop_ = std::move(loop);
  thread_ = std::thread([this] { loop_->Run(); });  // connections wait in the backlog until then
  return Status::Ok();
}

Status ApiServer::WriteFiles() {
  const std::string& d = opts_.dir;
  std::string ca = d + "/ca.crt";
  std::vector<std::pair<std::string, std::string>> files = {
      {ca, ca_pem_},
      {d + "/serviceaccount/ca.crt", ca_pem_},
      {d + "/serviceaccount/namespace", opts_.sa_namespace},
      {d + "/serviceaccount/token", sa_token_},
      {d + "/admin.kubeconfig", Kubeconfig(url(), ca, "admin", "token: " + admin_token_)},
      {d + "/provisioner.kubeconfig", Kubeconfig(url(), ca, opts_.sa_name, "tokenFile: " + d + "/serviceaccount/token")},
      {d + "/port", std::to_string(port_) + "\n"},  // last: its presence means ready to connect
  };
  for (const auto& [path, content] : files) {
    Status s = WriteFileAtomic(path, content, path.find("token") != std::string::npos ? 0600 : 0644);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

void ApiServer::Stop() {
  if (!loop_) return;
  {
    Store::Lock l(store_);
    watch_.stopping = true;
  }
  loop_->Stop();
  if (thread_.joinable()) thread_.join();
  loop_.reset();
}

Status ApiServer::RotateToken() {
  std::string token = "sa-" + RandomHex(24);
  {
    std::lock_guard<std::mutex> l(auth_mu_);
    sa_token_ = token;
  }
  return WriteFileAtomic(opts_.dir + "/serviceaccount/token", token, 0600);
}

// The user a request's bearer token names; system:anonymous for a request without one (no
// Authorization header, another scheme, an empty token: bearertoken.go sees no credentials, and
// anonymous auth is on by default); null for a token that names no one (401).
const User* ApiServer::Authenticate(const httplib::Request& req) {
  auto it = req.headers.find("Authorization");
  if (it == req.headers.end()) return &anonymous_user_;
  std::string_view token = it->second;
  std::string scheme(token.substr(0, 7));
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme != "bearer ") return &anonymous_user_;
  token.remove_prefix(7);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\n' || token.back() == '\r')) token.remove_suffix(1);
  if (token.empty()) return &anonymous_user_;
  if (token == admin_token_) return &admin_user_;
  std::lock_guard<std::mutex> l(auth_mu_);
  return token == sa_token_ ? &sa_user_ : nullptr;
}

bool ApiServer::TakeFault(const RequestInfo& info, Fault& out) {
  std::lock_guard<std::mutex> l(ctl_mu_);
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if (!it->verb.empty() && it->verb != info.verb) continue;
    if (!it->resource.empty() && it->resource != info.resource &&
        it->resource != info.resource + "/" + info.subresource)
      continue;
    out = *it;
    if (--it->count <= 0) faults_.erase(it);
    return true;
  }
  return false;
}

// Authenticates, authorises and answers a request, or says when to ask again (a pause, a delay).
ApiServer::Outcome ApiServer::Dispatch(const httplib::Request& req, Progress& p, httplib::Response& res) {
  RequestRecord& rec = p.rec;
  auto reply = [&](int code, const Json& body) {
    res.status = code;
    res.set_content(ToText(body), "application/json");
    rec.code = code;
    return Outcome();
  };
  bool control = req.path.rfind("/fake/", 0) == 0;
  if (!control && !p.waited) {
    auto now = Clock::now();
    if (now < watch_.PausedUntil()) return Later(watch_.PausedUntil(), true);
    p.waited = true;
    if (int ms = delay_ms_.load(); ms > 0) return Later(now + std::chrono::milliseconds(ms));
  }
  RequestInfo info = Resolve(req);
  Describe(rec, info);
  rec.resource_version = req.get_param_value("resourceVersion");
  const User* who = Authenticate(req);
  if (who == nullptr) {
    reply(401, StatusBody(401, "Unauthorized", "Unauthorized"));
    if (!control) Record(rec);
    return {};
  }
  const User& user = *who;
  rec.user = user.name;
  bool admin = who == &admin_user_;
  if (control) {
    if (!admin) return reply(403, StatusBody(403, "Forbidden", "forbidden: only the admin may use /fake/"));
    return Streamed(HandleControl(req, res));
  }
  // The bootstrap policy grants system:anonymous nothing but health and version, RBAC files or not.
  const bool checked = who == &anonymous_user_ || (!admin && rbac_enabled_);
  if (checked && !rbac_.Allows(user, info)) {
    std::string msg = Rbac::ForbiddenMessage(user, info);
    Details d;
    d.name = info.name;
    d.group = info.group;
    d.kind = info.resource;
    reply(403, StatusBody(403, "Forbidden", msg, info.is_resource ? &d : nullptr));
    {
      std::lock_guard<std::mutex> l(log_mu_);
      denials_.emplace_back(rec, msg);
    }
    Record(rec);
    return {};
  }
  if (info.is_resource && !p.fault_looked) {
    p.fault_looked = true;
    p.faulted = TakeFault(info, p.fault);
    if (p.faulted && p.fault.delay_ms > 0) return Later(Clock::now() + std::chrono::milliseconds(p.fault.delay_ms));
  }
  if (p.faulted && p.fault.code != 0) {
    const Fault& fault = p.fault;
    Details d;
    d.retry_after = fault.retry_after;
    if (fault.retry_after > 0) res.set_header("Retry-After", std::to_string(fault.retry_after));
    reply(fault.code, StatusBody(fault.code, ReasonForCode(fault.code), "injected fault", fault.retry_after > 0 ? &d : nullptr));
    Record(rec);
    return {};
  }
  if (info.is_resource && info.type != nullptr && info.verb == "watch" && ServedSubresource(info)) {
    auto stream = Watch(info, req, res);
    rec.code = stream ? 200 : res.status;
    Record(rec);
    return Streamed(std::move(stream));
  }
  Reply r = Serve(info, req);
  NameMade(rec, info, r);
  if (r.code == 200 && req.get_header_value("Accept").find("as=Table") != std::string::npos) {
    if (info.verb == "list") {
      r = Reply(r.code, ToTable(*info.type, Path(r.body(), {"items"})->get<JsonArray>(), *Path(r.body(), {"metadata"})));
    } else if (info.verb == "get") {
      JsonObject meta;
      meta["resourceVersion"] = Json(Str(r.body(), {"metadata", "resourceVersion"}));
      r = Reply(r.code, ToTable(*info.type, JsonArray{r.body()}, Json(meta)));
    }
  }
  reply(r.code, r.body());
  Record(rec);
  return {};
}

// The request's attributes, ?watch= included.
RequestInfo ApiServer::Resolve(const httplib::Request& req) {
  std::string watch = req.get_param_value("watch");
  return ResolveRequest(req.method, req.path, watch == "true" || watch == "1");
}

// The request log's view of the request's attributes.
void ApiServer::Describe(RequestRecord& rec, const RequestInfo& info) {
  rec.verb = info.verb;
  rec.resource = info.resource;
  rec.subresource = info.subresource;
  rec.ns = info.ns;
  rec.name = info.name;
}

// As audit logs do: a create is logged with the name of the object it made.
void ApiServer::NameMade(RequestRecord& rec, const RequestInfo& info, const Reply& r) {
  if (info.verb == "create" && r.code == 201 && rec.name.empty()) rec.name = Str(r.body(), {"metadata", "name"});
}

// Whether the request names the resource itself or a subresource the fake serves (status).
bool ApiServer::ServedSubresource(const RequestInfo& info) {
  return info.subresource.empty() || (info.subresource == "status" && info.type->has_status);
}

// The answer to an authorised request that is not a watch.
ApiServer::Reply ApiServer::Serve(const RequestInfo& info, const httplib::Request& req) {
  if (!info.is_resource) return NonResource(info);
  if (info.type == nullptr || !ServedSubresource(info))
    return {404, StatusBody(404, "NotFound", "the server could not find the requested resource")};
  if (info.verb == "get") return Get(info);
  if (info.verb == "list") return List(info, req);
  if (info.verb == "create") return Create(info, req.body);
  if (info.verb == "update") return Update(info, req.body);
  if (info.verb == "patch") return Patch(info, req);
  if (info.verb == "delete") return Delete(info, req.body);
  if (info.verb == "deletecollection") return DeleteCollection(info, req);
  return {405, StatusBody(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")};
}

// POST /fake/batch: the admin's requests in the body, {"requests": [{"method", "path", "body"}]}
// with each body as a JSON string, answered one after another as if each had come on its own
// (admission, validation, the store, watch events, the request log), and answered together:
// [{"code", "name", "uid"}] (the object's, or "message" for a failure). For a load generator
// that should not cost the fake a round trip per request (make bench).
std::string ApiServer::Batch(const Json& body) {
  const Json* list = Member(body, "requests");
  if (list == nullptr || !list->is<JsonArray>()) return "";
  std::string out = "[";
  for (const Json& item : list->get<JsonArray>()) {
    httplib::Request req;
    req.method = Str(item, {"method"});
    https_detail::SetTarget(req, Str(item, {"path"}));
    req.body = Str(item, {"body"});
    RequestRecord rec;
    rec.t_ns = NowNs();
    rec.user = admin_user_.name;
    RequestInfo info = Resolve(req);
    Describe(rec, info);
    Reply r = info.verb == "watch" ? Reply(400, BadRequest("a batch cannot watch")) : Serve(info, req);
    NameMade(rec, info, r);
    rec.code = r.code;
    Record(rec);
    JsonObject result;
    result["code"] = Json(static_cast<double>(r.code));
    if (r.code < 300) {
      result["name"] = Json(Str(r.body(), {"metadata", "name"}));
      result["uid"] = Json(Str(r.body(), {"metadata", "uid"}));
    } else {
      result["message"] = Json(Str(r.body(), {"message"}));
    }
    if (out.size() > 1) out += ',';
    AppendJson(out, Json(result));
  }
  return out + "]";
}

ApiServer::Reply ApiServer::NonResource(const RequestInfo& info) {
  const std::string& p = info.path;
  if (p == "/healthz" || p == "/readyz" || p == "/livez") return {200, Json("ok")};
  if (p == "/version") {
    JsonObject v;
    v["major"] = Json("1");
    v["minor"] = Json("32");
    v["gitVersion"] = Json("v1.32.0-fake");
    v["gitCommit"] = Json("fake");
    v["gitTreeState"] = Json("clean");
    v["buildDate"] = Json("2026-01-01T00:00:00Z");
    v["goVersion"] = Json("go1.23");
    v["compiler"] = Json("gc");
    v["platform"] = Json("linux/amd64");
    return {200, Json(v)};
  }
  return Discovery(info);
}

ApiServer::Reply ApiServer::Discovery(const RequestInfo& info) {
  const std::string& p = info.path;
  if (p == "/api") {
    JsonObject v, cidr;
    v["kind"] = Json("APIVersions");
    v["versions"] = StringArray({"v1"});
    cidr["clientCIDR"] = Json("0.0.0.0/0");
    cidr["serverAddress"] = Json("127.0.0.1:" + std::to_string(port_));
    v["serverAddressByClientCIDRs"] = Json(JsonArray{Json(cidr)});
    return {200, Json(v)};
  }
  if (p == "/api/v1") return {200, ResourceList("v1", "", "v1")};
  if (p == "/apis") {
    JsonArray groups;
    std::vector<std::string> seen;
    for (const auto& t : ResourceTypes()) {
      if (t.group.empty() || std::find(seen.begin(), seen.end(), t.group) != seen.end()) continue;
      seen.push_back(t.group);
      JsonObject gv, g;
      gv["groupVersion"] = Json(t.ApiVersion());
      gv["version"] = Json(t.version);
      g["name"] = Json(t.group);
      g["versions"] = Json(JsonArray{Json(gv)});
      g["preferredVersion"] = Json(gv);
      groups.emplace_back(g);
    }
    JsonObject list;
    list["kind"] = Json("APIGroupList");
    list["apiVersion"] = Json("v1");
    list["groups"] = Json(groups);
    return {200, Json(list)};
  }
  auto parts = SplitPath(p);
  if (parts.size() == 3 && parts[0] == "apis") {
    for (const auto& t : ResourceTypes())
      if (t.group == parts[1] && t.version == parts[2]) return {200, ResourceList(t.ApiVersion(), t.group, t.version)};
  }
  return {404, StatusBody(404, "NotFound", "the server could not find the requested resource")};
}

ApiServer::Reply ApiServer::Get(const RequestInfo& info) {
  Store::Lock l(store_);
  JsonRef o = store_.Ref(info.type->plural, ObjectKey(info.ns, info.name));
  if (o == nullptr) return {404, NotFoundStatus(*info.type, info.name)};
  return {200, o};
}

ApiServer::Reply ApiServer::List(const RequestInfo& info, const httplib::Request& req) {
  std::vector<Requirement> labels, fields;
  std::string bad;
  if (!ParseLabelSelector(req.get_param_value("labelSelector"), labels, bad)) return {400, BadRequest(bad)};
  if (!ParseSelector(req.get_param_value("fieldSelector"), fields))
    return {400, BadRequest("field selector syntax not supported by the fake")};
  std::string cont = req.get_param_value("continue");
  // The cacher serves resourceVersion=0 without a continue token from its cache, which ignores
  // limit: one full page (cacher.go shouldDelegateList).
  const bool from_cache = req.get_param_value("resourceVersion") == "0" && cont.empty();
  long limit = req.has_param("limit") && !from_cache ? std::atol(req.get_param_value("limit").c_str()) : 0;
  std::string after, why;
  // storage.DecodeContinue's errors, as etcd3's GetList answers them
  if (!cont.empty() && !Unhex(cont, after, why))
    return {400, BadRequest("invalid continue token: continue key is not valid: " + why)};
  Store::Lock l(store_);
  const auto& objs = store_.bucket(info.type->plural).objects;
  std::string prefix = info.ns.empty() ? "" : info.ns + "/";
  auto it = cont.empty() ? objs.lower_bound(prefix) : objs.upper_bound(after);
  JsonArray items;
  std::string last;
  long remaining = 0;
  for (; it != objs.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    if (!MatchesLabels(*it->second, labels) || !MatchesFields(*it->second, fields)) continue;
    if (limit > 0 && static_cast<long>(items.size()) >= limit) {
      ++remaining;
      continue;
    }
    items.push_back(*it->second);
    last = it->first;
  }
  JsonObject meta;
  meta["resourceVersion"] = Json(std::to_string(store_.rv()));
  if (remaining > 0) {
    meta["continue"] = Json(Hex(last));
    // etcd3's GetList counts the remaining keys, not the matching ones: with a selector it
    // leaves the count out rather than give a wrong one.
    // (Nor does a server whose RemainingItemCount feature gate is off.)
    if (labels.empty() && fields.empty() && remaining_count_) meta["remainingItemCount"] = Json(static_cast<double>(remaining));
  }
  JsonObject list;
  list["kind"] = Json(info.type->kind + "List");
  list["apiVersion"] = Json(info.type->ApiVersion());
  list["metadata"] = Json(meta);
  list["items"] = Json(items);
  return {200, Json(list)};
}

ApiServer::Reply ApiServer::Create(const RequestInfo& info, const std::string& body) {
  const ResourceType& t = *info.type;
  if (!info.name.empty() || !info.subresource.empty())
    return {405, StatusBody(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")};
  auto parsed = ParseJson(body);
  if (!parsed.ok() || !parsed->is<JsonObject>()) return {400, BadRequest("the body is not a JSON object")};
  Json obj = std::move(*parsed);
  if (std::string why = DecodeError(t, obj); !why.empty()) return {400, BadRequest(why)};
  std::string kind = Str(obj, {"kind"});
  if (!kind.empty() && kind != t.kind) return {400, BadRequest("the object kind " + kind + " does not match " + t.kind)};
  obj.get<JsonObject>()["kind"] = Json(t.kind);
  obj.get<JsonObject>()["apiVersion"] = Json(t.ApiVersion());
  JsonObject& m = Meta(obj);
  std::string body_ns = Str(obj, {"metadata", "namespace"});
  if (t.namespaced) {
    if (!body_ns.empty() && body_ns != info.ns)
      return {400, BadRequest("the namespace of the provided object does not match the namespace sent on the request")};
    if (info.ns.empty()) return {404, StatusBody(404, "NotFound", "the server could not find the requested resource")};
    m["namespace"] = Json(info.ns);
  } else {
    m.erase("namespace");
  }
  std::string gen = Str(obj, {"metadata", "generateName"});
  if (Str(obj, {"metadata", "name"}).empty() && !gen.empty()) m["name"] = Json(gen + RandomSuffix());
  std::string name = Str(obj, {"metadata", "name"});
  Store::Lock l(store_);
  // The NamespaceLifecycle admission plugin: nothing is made in a namespace that does not exist.
  if (t.namespaced && store_.Get("namespaces", info.ns) == nullptr)
    return {404, NotFoundStatus(TypeOf("namespaces"), info.ns)};
  InitMeta(obj);
  ApplyDefaults(t, obj);
  AdmitCreate(store_, t, obj);
  auto errs = Validate(t, obj);
  if (!errs.empty()) return {422, InvalidStatus(t, name, errs)};
  if (store_.Get(t.plural, ObjectKey(info.ns, name)) != nullptr) {
    Details d = DetailsFor(t, name);
    return {409, StatusBody(409, "AlreadyExists", t.QualifiedResource() + " \"" + name + "\" already exists", &d)};
  }
  store_.Put(t.plural, std::move(obj));
  return AnswerWrite(201, t.plural);
}

ApiServer::Reply ApiServer::Update(const RequestInfo& info, const std::string& body) {
  const ResourceType& t = *info.type;
  auto parsed = ParseJson(body);
  if (!parsed.ok() || !parsed->is<JsonObject>()) return {400, BadRequest("the body is not a JSON object")};
  Json obj = std::move(*parsed);
  if (std::string why = DecodeError(t, obj); !why.empty()) return {400, BadRequest(why)};
  std::string body_name = Str(obj, {"metadata", "name"});
  if (!body_name.empty() && body_name != info.name)
    return {400, BadRequest("the name of the object (" + body_name + ") does not match the name on the URL (" + info.name + ")")};
  std::string body_ns = Str(obj, {"metadata", "namespace"});
  if (t.namespaced && !body_ns.empty() && body_ns != info.ns)
    return {400, BadRequest("the namespace of the provided object does not match the namespace sent on the request")};
  {
    Store::Lock l(store_);
    if (store_.Get(t.plural, ObjectKey(info.ns, info.name)) != nullptr) {
      // Store.Update for a strategy that does not AllowUnconditionalUpdate (leases, CSI
      // drivers and capacities): the resourceVersion, a uint64 that is 0 when missing, is
      // printed with %#v.
      if (!t.unconditional_update && Str(obj, {"metadata", "resourceVersion"}).empty()) {
        ResourceType as_resource = t;
        as_resource.kind = t.plural;
        return {422, InvalidStatus(as_resource, info.name,
                                   {{"FieldValueInvalid", "metadata.resourceVersion", "Invalid value: 0x0: must be specified for an update"}})};
      }
      return StoreUpdateLocked(info, std::move(obj));
    }
  }
  {
    if (t.allow_create_on_update && info.subresource.empty()) {
      RequestInfo create = info;
      create.name.clear();
      Meta(obj)["name"] = Json(info.name);
      return Create(create, ToText(obj));
    }
    return {404, NotFoundStatus(t, info.name)};
  }
}

// The common tail of update and patch: preconditions, strategy (status vs. main resource),
// validation, validating admission, no-op detection, commit. Callers hold store_.mu.
ApiServer::Reply ApiServer::StoreUpdateLocked(const RequestInfo& info, Json proposed) {
  const ResourceType& t = *info.type;
  JsonRef cur_ref = store_.Ref(t.plural, ObjectKey(info.ns, info.name));  // kept alive while cur is read
  if (cur_ref == nullptr) return {404, NotFoundStatus(t, info.name)};
  const Json& cur = *cur_ref;
  std::string rv = Str(proposed, {"metadata", "resourceVersion"});
  std::string cur_rv = Str(cur, {"metadata", "resourceVersion"});
  if (!rv.empty() && rv != cur_rv)
    return {409, ConflictStatus(t, info.name, kModified)};
  Json next = std::move(proposed);
  next.get<JsonObject>()["kind"] = Json(t.kind);
  next.get<JsonObject>()["apiVersion"] = Json(t.ApiVersion());
  if (info.subresource == "status") {
    PrepareStatusUpdate(t, cur, next);
  } else if (t.has_status) {  // the main resource keeps the stored status
    if (const Json* st = Member(cur, "status"))
      next.get<JsonObject>()["status"] = *st;
    else
      next.get<JsonObject>().erase("status");
    // strategy.go PrepareForUpdate: a client that omits dataSourceRef gets it refilled, and a
    // claim that had no data source may not gain an invalid dataSource (fake_datasource.hpp).
    if (t.plural == "persistentvolumeclaims") PrepareClaimDataSources(next, &cur);
  }
  JsonObject& m = Meta(next);
  m["name"] = Json(info.name);
  if (t.namespaced) m["namespace"] = Json(info.ns); else m.erase("namespace");
  for (const char* k : {"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generateName"}) {
    const Json* v = Path(cur, {"metadata", k});
    if (v) m[k] = *v; else m.erase(k);
  }
  ApplyDefaults(t, next);
  if (t.plural == "csidrivers") SetCsiDriverGeneration(&cur, next);  // BeforeUpdate, PrepareForUpdate
  auto errs = Validate(t, next);
  for (auto& e : ValidateUpdate(t, cur, next)) errs.push_back(e);
  if (IsDeleting(cur)) {
    auto old_fin = StringList(cur, {"metadata", "finalizers"});
    std::vector<std::string> added;
    for (const auto& f : StringList(next, {"metadata", "finalizers"}))
      if (std::find(old_fin.begin(), old_fin.end(), f) == old_fin.end()) added.push_back(f);
    if (!added.empty()) {
      std::string list;
      for (const auto& a : added) list += (list.empty() ? "\"" : ", \"") + a + "\"";
      errs.push_back(Forbidden("metadata.finalizers",
                               "no new finalizers can be added if the object is being deleted, found new finalizers []string{" + list + "}"));
    }
  }
  if (!errs.empty()) return {422, InvalidStatus(t, info.name, errs)};
  // Validating admission comes after the strategy's validation (Store.Update: BeforeUpdate, then
  // updateValidation).
  if (t.plural == "persistentvolumeclaims" && info.subresource.empty()) {
    if (std::string why = ResizeRefusal(store_, cur, next); !why.empty()) {
      Details d = DetailsFor(t, info.name);
      return {403, StatusBody(403, "Forbidden", t.QualifiedResource() + " \"" + info.name + "\" is forbidden: " + why, &d)};
    }
  }
  DropEmptyMeta(next);
  Meta(next)["resourceVersion"] = Json(cur_rv);
  if (next == cur) return {200, cur_ref};  // nothing changed: no write, no event (as etcd3 GuaranteedUpdate)
  // An object being deleted whose last finalizer goes is deleted (Store.Update's
  // deleteWithoutFinalizers), and the answer is the object of the request, not the deleted state.
  if (IsDeleting(next) && StringList(next, {"metadata", "finalizers"}).empty()) {
    Json answer = next;
    store_.Commit(t.plural, std::move(next));
    return {200, std::move(answer)};
  }
  store_.Commit(t.plural, std::move(next));
  return AnswerWrite(200, t.plural);
}

ApiServer::Reply ApiServer::Patch(const RequestInfo& info, const httplib::Request& req) {
  const ResourceType& t = *info.type;
  std::string type = req.get_header_value("Content-Type");
  type = type.substr(0, type.find(';'));
  auto patch = ParseJson(req.body);
  if (!patch.ok()) return {400, BadRequest("the patch is not JSON: " + patch.status().message())};
  Store::Lock l(store_);
  JsonRef cur = store_.Ref(t.plural, ObjectKey(info.ns, info.name));  // kept alive while it is read
  if (cur == nullptr) return {404, NotFoundStatus(t, info.name)};
  const Json& existing = *cur;
  Json patched;
  if (type == "application/merge-patch+json") {
    patched = MergePatch(existing, *patch);
  } else if (type == "application/strategic-merge-patch+json") {
    patched = StrategicMergePatch(existing, *patch);
  } else if (type == "application/json-patch+json") {
    auto r = JsonPatch(existing, *patch);
    if (!r.ok()) return {422, StatusBody(422, "Invalid", r.status().message())};
    patched = *r;
  } else {
    return {415, StatusBody(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json")};
  }
  if (!patched.is<JsonObject>()) return {422, StatusBody(422, "Invalid", "the patch did not result in an object")};
  // The patcher decodes the patched object: what does not decode is an invalid patch.
  PruneUnknownFields(t, patched);
  if (std::string why = CanonicalQuantities(t, patched); !why.empty()) {
    std::string text = ToText(patched);
    return {422, StatusBody(422, "Invalid", "\"\" is invalid: patch: Invalid value: " + Quote(text) + ": " + why)};
  }
  // A resourceVersion in the patch is a precondition; otherwise the patch applies to the latest.
  if (Str(patched, {"metadata", "resourceVersion"}).empty())
    Meta(patched)["resourceVersion"] = Json(Str(existing, {"metadata", "resourceVersion"}));
  return StoreUpdateLocked(info, std::move(patched));
}

ApiServer::Reply ApiServer::Delete(const RequestInfo& info, const std::string& body) {
  Json options{JsonObject()};
  if (!body.empty()) {
    auto parsed = ParseJson(body);
    if (!parsed.ok() || !parsed->is<JsonObject>()) return {400, BadRequest("the body is not DeleteOptions")};
    options = *parsed;
  }
  Store::Lock l(store_);
  return DeleteLocked(info, options);
}

// Store.Delete: preconditions, then graceful deletion via deletionTimestamp when finalizers
// remain, else removal. Callers hold store_.mu.
ApiServer::Reply ApiServer::DeleteLocked(const RequestInfo& info, const Json& options) {
  const ResourceType& t = *info.type;
  std::string key = ObjectKey(info.ns, info.name);
  JsonRef cur_ref = store_.Ref(t.plural, key);  // kept alive while cur is read
  if (cur_ref == nullptr) return {404, NotFoundStatus(t, info.name)};
  const Json& cur = *cur_ref;
  std::string want_uid = Str(options, {"preconditions", "uid"});
  std::string have_uid = Str(cur, {"metadata", "uid"});
  if (!want_uid.empty() && want_uid != have_uid)
    return {409, ConflictStatus(t, info.name, "Precondition failed: UID in precondition: " + want_uid + ", UID in object meta: " + have_uid)};
  std::string want_rv = Str(options, {"preconditions", "resourceVersion"});
  std::string have_rv = Str(cur, {"metadata", "resourceVersion"});
  if (!want_rv.empty() && want_rv != have_rv)
    return {409, ConflictStatus(t, info.name, "Precondition failed: ResourceVersion in precondition: " + want_rv +
                                                  ", ResourceVersion in object meta: " + have_rv)};
  if (!StringList(cur, {"metadata", "finalizers"}).empty()) {
    if (IsDeleting(cur)) return {200, cur_ref};
    Json marked = cur;
    JsonObject& m = Meta(marked);
    m["deletionTimestamp"] = Json(NowRfc3339());
    m["deletionGracePeriodSeconds"] = Json(0.0);
    store_.Put(t.plural, std::move(marked));
    return AnswerWrite(200, t.plural);
  }
  store_.Remove(t.plural, key);
  if (t.return_deleted_object) return AnswerWrite(200, t.plural);
  Details d = DetailsFor(t, info.name);
  d.uid = have_uid;
  return {200, StatusBody(0, "", "", &d)};
}

ApiServer::Reply ApiServer::DeleteCollection(const RequestInfo& info, const httplib::Request& req) {
  std::vector<Requirement> labels, fields;
  std::string bad;
  if (!ParseLabelSelector(req.get_param_value("labelSelector"), labels, bad)) return {400, BadRequest(bad)};
  if (!ParseSelector(req.get_param_value("fieldSelector"), fields))
    return {400, BadRequest("field selector syntax not supported by the fake")};
  Store::Lock l(store_);
  JsonArray items;
  std::vector<std::string> names;
  for (const auto& [key, obj] : store_.bucket(info.type->plural).objects)
    if ((info.ns.empty() || Str(*obj, {"metadata", "namespace"}) == info.ns) && MatchesLabels(*obj, labels) &&
        MatchesFields(*obj, fields))
      names.push_back(Str(*obj, {"metadata", "name"}));
  for (const auto& n : names) {
    RequestInfo one = info;
    one.name = n;
    Reply r = DeleteLocked(one, Json(JsonObject()));
    if (r.code == 200 && r.body().is<JsonObject>() && Str(r.body(), {"kind"}) != "Status") items.push_back(r.body());
  }
  JsonObject meta, list;
  meta["resourceVersion"] = Json(std::to_string(store_.rv()));
  list["kind"] = Json(info.type->kind + "List");
  list["apiVersion"] = Json(info.type->ApiVersion());
  list["metadata"] = Json(meta);
  list["items"] = Json(items);
  return {200, Json(list)};
}

// Starts a watch (WatchStream), or answers 400 in res for a selector the fake cannot parse.
std::unique_ptr<Exchange> ApiServer::Watch(const RequestInfo& info, const httplib::Request& req,
                                           httplib::Response& res) {
  WatchStream::Params p;
  std::string bad;
  if (!ParseLabelSelector(req.get_param_value("labelSelector"), p.labels, bad) ||
      !ParseSelector(req.get_param_value("fieldSelector"), p.fields)) {
    res.status = 400;
    if (bad.empty()) bad = "field selector syntax not supported by the fake";
    res.set_content(ToText(BadRequest(bad)), "application/json");
    return nullptr;
  }
  p.type = info.type;
  p.ns = info.ns;
  p.bookmarks = req.get_param_value("allowWatchBookmarks") == "true";
  if (req.get_header_value("Accept").find("as=Table") != std::string::npos) {
    const ResourceType* type = info.type;
    p.as_table = [type](const Json& obj) { return ToTable(*type, JsonArray{obj}, Json(JsonObject())); };
  }
  p.rv = req.get_param_value("resourceVersion");
  // The cacher's ParseResourceVersion: a storage.InvalidError that no one turns into an API
  // error, so the handler answers it as an internal error (500, no reason).
  if (std::string why = ParseUintError(p.rv); !p.rv.empty() && !why.empty()) {
    res.status = 500;
    res.set_content(ToText(StatusBody(500, "", "resourceVersion: Invalid value: " + Quote(p.rv) + ": " + why)),
                    "application/json");
    return nullptr;
  }
  if (req.has_param("timeoutSeconds")) p.timeout_seconds = std::max(1, std::atoi(req.get_param_value("timeoutSeconds").c_str()));
  return std::make_unique<WatchStream>(store_, watch_, std::move(p));
}

// GET /fake/wait (see the top of this file and WaitStream), or its 400 or 410 in res.
std::unique_ptr<Exchange> ApiServer::WaitFor(const httplib::Request& req, httplib::Response& res) {
  WaitStream::Params p;
  p.plural = req.get_param_value("resource");
  const std::string until = req.get_param_value("until");
  p.until_deleted = until == "Deleted";
  p.prefix = req.get_param_value("prefix");
  std::stringstream dotted(req.has_param("prefixPath") ? req.get_param_value("prefixPath") : "metadata.name");
  for (std::string part; std::getline(dotted, part, '.');) p.path.push_back(part);
  p.want = std::atol(req.get_param_value("count").c_str());
  p.timeout_seconds = req.has_param("timeoutSeconds") ? std::atoi(req.get_param_value("timeoutSeconds").c_str()) : 60;
  auto answer = [&](int code, const Json& body) {
    res.status = code;
    res.set_content(ToText(body), "application/json");
    return nullptr;
  };
  if (FindType("", "v1", p.plural) == nullptr || (until != "Bound" && until != "Deleted") || p.want < 1 ||
      p.timeout_seconds < 1)
    return answer(400, BadRequest("wait needs resource (a core/v1 plural), until=Bound|Deleted, count >= 1"));
  Store::Lock l(store_);
  Bucket& b = store_.bucket(p.plural);
  uint64_t from = std::strtoull(req.get_param_value("resourceVersion").c_str(), nullptr, 10);  // 0: the oldest kept
  if (from != 0 && from < b.floor_rv) return answer(410, StatusBody(410, "Expired", "too old resource version"));
  return std::make_unique<WaitStream>(store_, watch_, std::move(p), b.SeqAfter(from));
}

std::string ApiServer::RequestsJson() const {
  std::lock_guard<std::mutex> l(log_mu_);
  std::string out = "[";
  for (const auto& r : requests_)
    out += (out.size() > 1 ? ",\n" : "") + RecordJson(r, ",\"code\":" + std::to_string(r.code));
  return out + "]";
}

std::string ApiServer::DenialsJson() const {
  std::lock_guard<std::mutex> l(log_mu_);
  std::string out = "[";
  for (const auto& [r, msg] : denials_)
    out += (out.size() > 1 ? ",\n" : "") + RecordJson(r, ",\"message\":" + Quote(msg));
  return out + "]";
}

// The test controls under /fake/: answered in res, or by the stream returned (/fake/wait).
std::unique_ptr<Exchange> ApiServer::HandleControl(const httplib::Request& req, httplib::Response& res) {
  auto ok = [&](const Json& body) {
    res.status = 200;
    res.set_content(ToText(body), "application/json");
    return nullptr;
  };
  auto bad = [&](const std::string& msg) {
    res.status = 400;
    res.set_content(ToText(StatusBody(400, "BadRequest", msg)), "application/json");
    return nullptr;
  };
  const std::string& p = req.path;
  Json done = StatusBody(0, "", "");
  if (req.method == "POST" && p == "/fake/faults") {
    auto body = ParseJson(req.body);
    if (!body.ok() || !body->is<JsonObject>()) return bad("body must be a JSON object");
    Fault f;
    f.verb = Str(*body, {"verb"});
    f.resource = Str(*body, {"resource"});
    auto num = [&](const char* k, int def) {
      const Json* v = Member(*body, k);
      return v && v->is<double>() ? static_cast<int>(v->get<double>()) : def;
    };
    f.code = num("code", 500);
    f.count = num("count", 1);
    f.retry_after = num("retryAfter", 0);
    f.delay_ms = num("delayMs", 0);
    if ((f.code != 0 && (f.code < 400 || f.code > 599)) || (f.code == 0 && f.delay_ms <= 0) || f.count < 1)
      return bad("code must be 400-599 (or 0 with delayMs: held back, then carried out) and count at least 1");
    AddFault(f);
    return ok(done);
  }
  if (req.method == "POST" && p == "/fake/clear-faults") return ClearFaults(), ok(done);
  if (req.method == "POST" && p == "/fake/drop-watches") return DropWatches(), ok(done);
  if (req.method == "POST" && p == "/fake/reset-connections") {
    if (loop_) loop_->ResetConnections();
    return ok(done);
  }
  if (req.method == "POST" && p == "/fake/compact") return Compact(), ok(done);
  if (req.method == "POST" && p == "/fake/hold-claim-binding") {
    const std::string on = req.get_param_value("on");
    if (on != "true" && on != "false") return bad("on must be true or false");
    Store::Lock l(store_);
    ctl_.HoldClaimSide(on == "true");
    return ok(done);
  }
  if (req.method == "POST" && p == "/fake/remaining-item-count") {
    const std::string on = req.get_param_value("on");
    if (on != "true" && on != "false") return bad("on must be true or false");
    remaining_count_ = on == "true";
    return ok(done);
  }
  if (req.method == "POST" && p == "/fake/pause") return Pause(std::atof(req.get_param_value("seconds").c_str())), ok(done);
  if (req.method == "POST" && p == "/fake/delay") return SetDelayMs(std::atoi(req.get_param_value("ms").c_str())), ok(done);
  if (req.method == "POST" && p == "/fake/extra-work") {
    double percent = std::atof(req.get_param_value("percent").c_str());
    if (percent < 0 || percent > 1000) return bad("percent must be 0-1000");
    if (loop_) loop_->SetExtraWork(percent / 100);
    return ok(done);
  }
  if (req.method == "POST" && p == "/fake/rotate-token") {
    Status s = RotateToken();
    if (!s.ok()) {
      res.status = 500;
      res.set_content(ToText(StatusBody(500, "InternalError", s.message())), "application/json");
      return nullptr;
    }
    return ok(done);
  }
  if (req.method == "POST" && p == "/fake/reset-requests") return ResetRequests(), ok(done);
  if (req.method == "POST" && p == "/fake/batch") {
    auto body = ParseJson(req.body);
    std::string answer = body.ok() ? Batch(*body) : "";
    if (answer.empty()) return bad("body must be {\"requests\": [{\"method\", \"path\", \"body\" (a string)}]}");
    res.status = 200;
    res.set_content(answer, "application/json");
    return nullptr;
  }
  if (req.method == "GET" && p == "/fake/wait") return WaitFor(req, res);
  if (req.method == "GET" && p == "/fake/faults") {
    res.status = 200;
    res.set_content("{\"armed\":" + std::to_string(ArmedFaults()) + "}", "application/json");
    return nullptr;
  }
  if (req.method == "GET" && (p == "/fake/denials" || p == "/fake/requests")) {
    res.status = 200;
    res.set_content(p == "/fake/denials" ? DenialsJson() : RequestsJson(), "application/json");
    return nullptr;
  }
  res.status = 404;
  res.set_content(ToText(StatusBody(404, "NotFound", "no such test control: " + req.method + " " + p)), "application/json");
  return nullptr;
}

}  // namespace fake
