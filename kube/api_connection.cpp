// The transport of api_connection.hpp over cpp-httplib's SSLClient and OpenSSL. Hand-written
// on top of httplib: the token file's rotation, the retry after a 401, the names of transport
// failures and the path encoding are this program's (httplib has none of them).
#include "kube/api_connection.hpp"

#include <arpa/inet.h>
#include <httplib.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "base/log.hpp"
#include "kube/k8s_json.hpp"

// httplib's SSLClient, which also drops a kept-alive connection the server has begun to close:
// httplib's own check takes a close_notify waiting on it for a live connection, and sends on it.
class KeptAliveClient : public httplib::SSLClient {
 public:
  using httplib::SSLClient::SSLClient;

  // Before a request: closes the idle connection if anything (bytes, or its end) waits on it.
  void DropIfClosing() {
    bool closing;
    {
      std::lock_guard<std::mutex> lock(socket_mutex_);  // against stop() from another thread
      char c;
      closing = socket_.is_open() && ::recv(socket_.sock, &c, 1, MSG_PEEK | MSG_DONTWAIT) >= 0;
    }
    if (closing) stop();
  }
};

namespace {

constexpr std::chrono::seconds kConnectTimeout{10};  // also bounds the TLS handshake

Status::Code CodeFor(int http) {
  switch (http) {
    case 401: return Status::kUnauthorized;
    case 403: return Status::kForbidden;
    case 404: return Status::kNotFound;
    case 409: return Status::kConflict;
    case 410: return Status::kGone;
    case 400:
    case 422: return Status::kInvalid;
    case 0:
    case 429:
    case 500:
    case 502:
    case 503:
    case 504: return Status::kUnavailable;
    default: return http >= 500 ? Status::kUnavailable : Status::kError;
  }
}

// The resource named by a path, for metrics: "/api/v1/namespaces/x/events/y" -> "events".
// *named, if given, says whether the path goes on to the name of one object ("y").
std::string ResourceOf(const std::string& path, bool* named = nullptr) {
  std::string p = path.substr(0, path.find('?'));
  std::vector<std::string> parts;
  for (size_t i = 0; i < p.size();) {
    size_t j = p.find('/', i);
    if (j == std::string::npos) j = p.size();
    if (j > i) parts.push_back(p.substr(i, j - i));
    i = j + 1;
  }
  size_t start = (!parts.empty() && parts[0] == "api") ? 2 : 3;  // api/v1 or apis/group/v1
  if (parts.size() > start + 1 && parts[start] == "namespaces") start += 2;
  if (named != nullptr) *named = parts.size() > start + 1;
  return parts.size() > start ? parts[start] : "";
}

// Why a dial failed, in the system's words. httplib's Error::Connection drops them, so this
// dials once more (after a failure only; the connect bounded by 2 s).
std::string WhyNoConnection(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list); rc != 0)
    return "cannot resolve " + host + ": " + ::gai_strerror(rc);
  int fd = ::socket(list->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval limit{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  int err = fd < 0 || ::connect(fd, list->ai_addr, list->ai_addrlen) != 0 ? errno : 0;
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(list);
  if (err == 0 || err == EINPROGRESS) return "cannot connect";
  return "cannot connect: " + std::string(std::strerror(err));
}

// A transport failure in words ("cannot connect: Connection refused").
std::string Describe(httplib::Error e, const ApiEndpoint& ep, KeptAliveClient& cli, bool timed_out,
                     std::chrono::seconds read_timeout) {
  switch (e) {
    case httplib::Error::Connection: return WhyNoConnection(ep.host, ep.port);
    case httplib::Error::ConnectionTimeout:
      return "cannot connect: no answer within " + std::to_string(kConnectTimeout.count()) + " s";
    case httplib::Error::SSLConnection: {
      const char* why = ERR_reason_error_string(ERR_peek_error());
      ERR_clear_error();
      return std::string("TLS handshake failed") + (why != nullptr ? std::string(": ") + why : "");
    }
    case httplib::Error::SSLServerVerification: {
      long v = cli.get_openssl_verify_result();
      return std::string("the server's TLS certificate was refused: ") +
             (v != X509_V_OK ? X509_verify_cert_error_string(v) : "hostname mismatch") +
             " (it must be signed by the configured CA and name " + ep.host + ")";
    }
    case httplib::Error::SSLLoadingCerts: return "the system's CA certificates cannot be loaded";
    case httplib::Error::Write: return "sending the request failed";
    case httplib::Error::Read:
      return timed_out ? "no answer within " + std::to_string(read_timeout.count()) + " s"
                       : "the connection closed before the answer was complete, or the answer is not HTTP/1.1";
    default: return httplib::to_string(e);
  }
}

// The path as it is, but with bytes that may not appear in a request line (spaces, controls,
// non-ASCII) percent-encoded, so that a value cannot split or bend the request. By hand:
// httplib's encode_url leaves tabs and other controls, and ends the path at a NUL.
std::string EncodedPath(const std::string& p) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : p) {
    if (c > 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      out.append({'%', kHex[c >> 4], kHex[c & 15]});
    }
  }
  return out;
}

// Retry-After in seconds; 0 if absent or not a number of seconds.
int RetryAfter(const std::string& v) {
  if (v.empty() || v.size() > 8) return 0;
  for (char c : v)
    if (c < '0' || c > '9') return 0;
  return std::stoi(v);
}

// Every certificate of a PEM bundle in a new store; nullptr if there is none.
X509_STORE* StoreOf(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509_STORE* store = X509_STORE_new();
  int n = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    if (X509_STORE_add_cert(store, cert) == 1) ++n;
    X509_free(cert);
  }
  BIO_free(bio);
  ERR_clear_error();  // the end of the bundle reads as an error
  if (n > 0) return store;
  X509_STORE_free(store);
  return nullptr;
}

// One object of a PEM text, as `read` (PEM_read_bio_X509, ...) reads it; nullptr if none.
template <typename T, typename Read>
T* ReadPem(const std::string& pem, Read read) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  pem_password_cb* no_password = [](char*, int, int, void*) { return 0; };  // never prompt
  T* out = read(bio, nullptr, no_password, nullptr);
  BIO_free(bio);
  return out;
}

std::string VerbOf(const std::string& method, const std::string& path) {
  if (method == "GET") {
    bool named = false;
    ResourceOf(path, &named);
    return path.find("watch=") != std::string::npos ? "watch" : named ? "get" : "list";
  }
  if (method == "POST") return "create";
  if (method == "PUT") return "update";
  if (method == "PATCH") return "patch";
  return "delete";
}

}  // namespace

std::string TokenSource::Get() {
  std::lock_guard<std::mutex> lock(mu_);
  if (file_.empty()) return token_;
  const auto now = std::chrono::steady_clock::now();
  if (loaded_ && now - checked_ < std::chrono::seconds(1)) return token_;
  checked_ = now;
  struct stat st {};
  if (::stat(file_.c_str(), &st) != 0) return token_;  // keep the last one; the server will say
  if (!loaded_ || st.st_ino != ino_ || st.st_mtim.tv_sec != mtime_.tv_sec || st.st_mtim.tv_nsec != mtime_.tv_nsec ||
      st.st_size != size_) {
    std::ifstream in(file_);
    std::string t((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
    if (in.good() || in.eof()) {
      if (loaded_ && t != token_) LogInfo("service-account token reloaded from " + file_);
      token_ = t;
      ino_ = st.st_ino;
      mtime_ = st.st_mtim;
      size_ = st.st_size;
      loaded_ = true;
    }
  }
  return token_;
}

void TokenSource::Invalidate() {
  std::lock_guard<std::mutex> lock(mu_);
  loaded_ = false;
}

Result<std::shared_ptr<ApiEndpoint>> ApiEndpoint::From(const ApiCredentials& c) {
  auto e = std::make_shared<ApiEndpoint>();
  std::string s = c.server;
  if (s.rfind("https://", 0) != 0) return Status::Invalid(c.source + ": server \"" + s + "\" is not an https:// URL");
  s = s.substr(8);
  if (size_t slash = s.find('/'); slash != std::string::npos) s = s.substr(0, slash);
  std::string host = s, port;
  if (!s.empty() && s[0] == '[') {  // [IPv6]:port
    size_t close = s.find(']');
    if (close == std::string::npos) return Status::Invalid(c.source + ": bad server address \"" + c.server + "\"");
    host = s.substr(1, close - 1);
    if (close + 1 < s.size() && s[close + 1] == ':') port = s.substr(close + 2);
  } else if (size_t colon = s.rfind(':'); colon != std::string::npos) {
    host = s.substr(0, colon);
    port = s.substr(colon + 1);
  }
  if (host.empty()) return Status::Invalid(c.source + ": server \"" + c.server + "\" has no host");
  e->host = host;
  if (!port.empty()) {
    char* end = nullptr;
    long p = std::strtol(port.c_str(), &end, 10);
    if (*end != '\0' || p <= 0 || p > 65535) return Status::Invalid(c.source + ": bad port in \"" + c.server + "\"");
    e->port = static_cast<int>(p);
  }
  e->ca_pem = c.ca_pem;
  e->client_cert_pem = c.client_cert_pem;
  e->client_key_pem = c.client_key_pem;
  e->insecure = c.insecure_skip_tls_verify;
  e->token = std::make_shared<TokenSource>(c.token, c.token_file);
  e->description = c.server + " (" + c.source + ")";
  return e;
}

ApiConnection::ApiConnection(std::shared_ptr<const ApiEndpoint> ep) : ep_(std::move(ep)) {}
ApiConnection::~ApiConnection() = default;

Status ApiConnection::Init() {
  auto invalid = [this](const std::string& what) { return Status::Invalid(what + " (" + ep_->description + ")"); };
  const std::string bad_pair = "the client certificate and key are not valid PEM, or do not belong together";
  const bool with_cert = !ep_->client_cert_pem.empty() || !ep_->client_key_pem.empty();
  X509* cert = with_cert ? ReadPem<X509>(ep_->client_cert_pem, PEM_read_bio_X509) : nullptr;
  EVP_PKEY* key = with_cert ? ReadPem<EVP_PKEY>(ep_->client_key_pem, PEM_read_bio_PrivateKey) : nullptr;
  std::unique_ptr<KeptAliveClient> cli;
  if (!with_cert || (cert != nullptr && key != nullptr))
    cli = std::make_unique<KeptAliveClient>(ep_->host, ep_->port, cert, key);  // it takes its own references
  X509_free(cert);
  EVP_PKEY_free(key);
  ERR_clear_error();
  if (cli == nullptr || !cli->is_valid()) return invalid(bad_pair);  // is_valid: the key fits the certificate
  SSL_CTX* ctx = cli->ssl_context();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  if (ep_->insecure) {
    cli->enable_server_certificate_verification(false);
  } else {
    if (!ep_->ca_pem.empty()) {
      X509_STORE* store = StoreOf(ep_->ca_pem);
      if (store == nullptr) return invalid("the CA certificate is not valid PEM");
      cli->set_ca_cert_store(store);  // the client's context owns it
      // httplib adds the system's CAs to the store unless it is given a path to load: a
      // directory that cannot hold any keeps the trust to the configured CA alone.
      cli->set_ca_cert_path("", "/dev/null");
    }
    // httplib's own name check falls back to the common name and takes partial wildcards;
    // OpenSSL's, run with the chain's, does neither and says why it refused.
    X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    in6_addr ip{};
    bool is_ip = inet_pton(AF_INET, ep_->host.c_str(), &ip) == 1 || inet_pton(AF_INET6, ep_->host.c_str(), &ip) == 1;
    if (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, ep_->host.c_str()) != 1
              : X509_VERIFY_PARAM_set1_host(param, ep_->host.c_str(), 0) != 1)
      return invalid("cannot check the server's certificate for the name \"" + ep_->host + "\"");
  }
  cli->set_keep_alive(true);
  cli->set_url_encode(false);  // Send encodes the path itself
  cli->set_tcp_nodelay(true);  // headers and body are two writes: the body must not wait for an ACK
  cli->set_connection_timeout(kConnectTimeout);
  cli->set_write_timeout(ep_->request_timeout);
  cli_ = std::move(cli);
  return Status::Ok();
}

Result<HttpResponse> ApiConnection::Request(const std::string& method, const std::string& path, const std::string& body,
                                            const std::string& content_type, std::chrono::seconds timeout,
                                            size_t max_body) {
  if (timeout.count() == 0) timeout = ep_->request_timeout;
  Result<HttpResponse> r = Once(method, path, body, content_type, timeout, max_body);
  if (r.ok() && RefusedCredentials(r->status)) {
    ep_->token->Invalidate();
    r = Once(method, path, body, content_type, timeout, max_body);
  }
  return r;
}

Status ApiConnection::Stream(const std::string& path, const std::function<bool(const std::string&)>& on_line,
                             std::chrono::seconds read_timeout) {
  std::string error_body;
  WatchLineSplitter splitter;
  Status split_status;
  bool stopped_by_caller = false;
  Answer a = Send("GET", path, "", "", read_timeout, [&](int status, const char* data, size_t n) {
    if (status != 200) {
      if (error_body.size() < 65536) error_body.append(data, n);
      return true;
    }
    split_status = splitter.Feed(data, n, [&](const std::string& line) {
      if (!stopped_by_caller && !on_line(line)) stopped_by_caller = true;
    });
    return split_status.ok() && !stopped_by_caller;
  });
  last_retry_after_ = a.retry_after;
  Observe("watch", path, a.whole ? a.status : 0);
  if (stopped_by_caller || stopped_) return Status::Ok();
  if (!split_status.ok()) return split_status.Wrap("watch " + path);
  if (RefusedCredentials(a.status)) ep_->token->Invalidate();
  if (a.status != 0 && a.status != 200)
    return Status(CodeFor(a.status), StatusMessage(a.status, error_body));
  if (!a.failure.empty()) return Unreachable("watch " + path, a.failure);
  return Status::Ok();
}

void ApiConnection::Stop() {
  stopped_ = true;
  if (cli_) cli_->stop();
}

void ApiConnection::Close() {
  closed_ = true;
  Stop();
}

bool ApiConnection::RefusedCredentials(int status) const {
  return ep_->token && (status == 401 || (status == 403 && !sent_token_));
}

ApiConnection::Answer ApiConnection::Send(const std::string& method, const std::string& path, const std::string& body,
                                          const std::string& content_type, std::chrono::seconds read_timeout,
                                          const Receiver& receive) {
  if (closed_) {
    Answer closed;
    closed.failure = "canceled";
    return closed;
  }
  stopped_ = false;
  httplib::Request req;
  req.method = method;
  req.path = EncodedPath(path);
  req.headers = {{"Accept", "application/json"}, {"User-Agent", "hostpath-provisioner"}};
  sent_token_ = false;
  if (ep_->token) {
    std::string t = ep_->token->Get();
    if (!t.empty()) req.headers.emplace("Authorization", "Bearer " + t);
    sent_token_ = !t.empty();
  }
  if (!body.empty()) {
    req.body = body;
    req.headers.emplace("Content-Type", content_type);
  }
  httplib::Response res;
  auto last_read = std::chrono::steady_clock::now();  // tells a read that timed out from a closed connection
  bool stopped_by_receiver = false;
  req.response_handler = [&](const httplib::Response&) {
    last_read = std::chrono::steady_clock::now();
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    last_read = std::chrono::steady_clock::now();
    stopped_by_receiver = !receive(res.status, data, n);
    return !stopped_by_receiver;
  };
  cli_->set_read_timeout(read_timeout);
  cli_->DropIfClosing();
  ERR_clear_error();  // what OpenSSL says after a failed handshake must be about this one
  httplib::Error e = httplib::Error::Success;
  bool ok = cli_->send(req, res, e);
  Answer a;
  a.status = res.status > 0 ? res.status : 0;
  a.retry_after = RetryAfter(res.get_header_value("Retry-After"));
  a.whole = ok || stopped_by_receiver || (stopped_ && a.status != 0);
  if (ok || stopped_by_receiver) return a;
  bool timed_out = std::chrono::steady_clock::now() - last_read >= read_timeout;
  a.failure = stopped_ ? "canceled" : Describe(e, *ep_, *cli_, timed_out, read_timeout);
  return a;
}

Result<HttpResponse> ApiConnection::Once(const std::string& method, const std::string& path, const std::string& body,
                                         const std::string& content_type, std::chrono::seconds timeout,
                                         size_t max_body) {
  if (method != "POST" && method != "PUT" && method != "PATCH" && method != "DELETE" && method != "GET")
    return Status::Error("unsupported method " + method);
  HttpResponse out;
  bool too_big = false;
  Answer a = Send(method, path, body, content_type, timeout, [&](int, const char* data, size_t n) {
    too_big = max_body > 0 && out.body.size() + n > max_body;
    if (!too_big) out.body.append(data, n);
    return !too_big;
  });
  last_retry_after_ = a.retry_after;
  Observe(VerbOf(method, path), path, a.whole ? a.status : 0);
  if (too_big) return Status(Status::kTooLarge, method + " " + path + ": answer longer than " + std::to_string(max_body) + " bytes");
  if (!a.failure.empty()) return Unreachable(method + " " + path, a.failure);
  out.status = a.status;
  out.retry_after = a.retry_after;
  return out;
}

Status ApiConnection::Unreachable(const std::string& what, const std::string& failure) const {
  return Status(Status::kUnavailable, what + ": " + failure + " talking to " + ep_->description);
}

void ApiConnection::Observe(const std::string& verb, const std::string& path, int code) const {
  if (ep_->observer) ep_->observer(verb, ResourceOf(path), code);
}

Status Check(const Result<HttpResponse>& r, const std::string& what) {
  if (!r.ok()) return r.status().Wrap(what);
  if (r->status >= 200 && r->status < 300) return Status::Ok();
  return Status(CodeFor(r->status), what + ": " + StatusMessage(r->status, r->body));
}
