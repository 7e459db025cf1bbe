// The transport to the API server: TLS and authentication (CA, client certificate, bearer
// token re-read when it rotates), one keep-alive connection per thread, requests and watch
// streams, and HTTP answers as Status values. No Kubernetes types here: k8s.hpp makes the
// typed calls over an ApiConnection.
#pragma once
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "http_client.hpp"
#include "k8s_json.hpp"
#include "kubeconfig.hpp"
#include "log.hpp"
#include "status.hpp"
// A bearer token, from a string or a file. The file is re-read when it changes (bound
// service-account tokens rotate) and after the server said 401. Thread-safe.
class TokenSource {
 public:
  TokenSource(std::string token, std::string file) : token_(std::move(token)), file_(std::move(file)) {}

  // The current token; "" when there is none. Re-reads the file if its identity or mtime
  // changed, looking at most once a second (kubelet writes a new token long before the old
  // one expires; a 401 makes the next Get look at once).
  std::string Get() {
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

  // After a 401: read the file again on the next Get, even if it looks unchanged.
  void Invalidate() {
    std::lock_guard<std::mutex> lock(mu_);
    loaded_ = false;
  }

 private:
  std::mutex mu_;
  std::string token_;
  std::string file_;
  bool loaded_ = false;
  std::chrono::steady_clock::time_point checked_;  // when the file was last looked at
  ino_t ino_ = 0;
  struct timespec mtime_ {};
  off_t size_ = 0;
};

struct HttpResponse {
  int status = 0;
  std::string body;
  int retry_after = 0;  // seconds, from a Retry-After header; 0 if none
};

// Called once per finished request (for metrics): verb, resource, HTTP code (0 = transport error).
using RequestObserver = std::function<void(const std::string& verb, const std::string& resource, int code)>;

// What every connection shares: where the server is and how to trust and authenticate to it.
struct ApiEndpoint {
  std::string host;
  int port = 443;
  std::string ca_pem;
  std::string client_cert_pem, client_key_pem;
  bool insecure = false;
  std::shared_ptr<TokenSource> token;
  RequestObserver observer;
  std::string description;  // for messages, e.g. "https://10.43.0.1:443 (in-cluster service account ...)"

  // Parses "https://host[:port]" out of the credentials. Errors name the source.
  static Result<std::shared_ptr<ApiEndpoint>> From(const ApiCredentials& c) {
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

  // The TLS context every connection to this server shares, made on first use. Errors: a CA or
  // client certificate or key that cannot be used.
  Result<std::shared_ptr<const TlsContext>> Tls() const {
    std::lock_guard<std::mutex> lock(tls_mu_);
    if (tls_ == nullptr) {
      auto made = TlsContext::Make({ca_pem, client_cert_pem, client_key_pem, !insecure});
      if (!made.ok()) return Status(made.status().code(), made.status().message() + " (" + description + ")");
      tls_ = *made;
    }
    return tls_;
  }

 private:
  mutable std::mutex tls_mu_;
  mutable std::shared_ptr<const TlsContext> tls_;
};

namespace k8s_detail {

inline Status::Code CodeFor(int http) {
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
inline std::string ResourceOf(const std::string& path) {
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
  return parts.size() > start ? parts[start] : "";
}

}  // namespace k8s_detail

// One keep-alive HTTPS connection to the API server. Not thread-safe: each thread (each
// watch, the worker) has its own. Stop() may be called from another thread to abort.
class ApiConnection {
 public:
  explicit ApiConnection(std::shared_ptr<const ApiEndpoint> ep) : ep_(std::move(ep)) {}

  // Prepares TLS. Errors: a CA or client certificate that cannot be read.
  Status Init() {
    auto tls = ep_->Tls();
    if (!tls.ok()) return tls.status();
    cli_ = std::make_unique<HttpsClient>(*tls, ep_->host, ep_->port);
    return Status::Ok();
  }

  // Sends one request and reads the whole answer. `timeout` bounds the read. A 401 makes the
  // token be re-read and the request sent once more. Transport failures come back as
  // Unavailable statuses; HTTP errors come back as a response (callers use Check()).
  Result<HttpResponse> Request(const std::string& method, const std::string& path, const std::string& body = "",
                               const std::string& content_type = "application/json",
                               std::chrono::seconds timeout = std::chrono::seconds(30)) {
    Result<HttpResponse> r = Once(method, path, body, content_type, timeout);
    if (r.ok() && r->status == 401 && ep_->token) {
      ep_->token->Invalidate();
      r = Once(method, path, body, content_type, timeout);
    }
    return r;
  }

  // A request, to send alone or together with others (RequestAll).
  struct Call {
    std::string method, path, body;
    std::string content_type = "application/json";
  };
  Result<HttpResponse> Request(const Call& c, std::chrono::seconds timeout = std::chrono::seconds(30)) {
    return Request(c.method, c.path, c.body, c.content_type, timeout);
  }

  // Sends the calls at once, pipelined over the connection (one write; the server answers them
  // in order), and reads every answer whole: a result per call, in order, as Request gives. A
  // call the connection broke before answering gets an Unavailable status: it may or may not
  // have been done. 401 answers make the token be re-read and those calls sent once more.
  std::vector<Result<HttpResponse>> RequestAll(const std::vector<Call>& calls,
                                               std::chrono::seconds timeout = std::chrono::seconds(30)) {
    std::vector<Result<HttpResponse>> out = AllOnce(calls, timeout);
    std::vector<size_t> again;
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i].ok() && out[i]->status == 401) again.push_back(i);
    if (again.empty() || !ep_->token) return out;
    ep_->token->Invalidate();
    std::vector<Call> retry;
    for (size_t i : again) retry.push_back(calls[i]);
    std::vector<Result<HttpResponse>> second = AllOnce(retry, timeout);
    for (size_t k = 0; k < again.size(); ++k) out[again[k]] = std::move(second[k]);
    return out;
  }

  // GETs `path` as a stream and calls on_line for each complete line. Returns when the server
  // ends the stream (ok), on_line returns false (ok), Stop() is called, the read times out,
  // or the answer is not 200 (its Status). A 401 makes the token be re-read for next time.
  Status Stream(const std::string& path, const std::function<bool(const std::string&)>& on_line,
                std::chrono::seconds read_timeout) {
    last_retry_after_ = 0;
    std::string headers = Headers();
    int code = 0;
    int retry_after = 0;
    std::string error_body;
    WatchLineSplitter splitter;
    Status split_status;
    bool stopped_by_caller = false;
    HttpsClient::Error e = cli_->Send(
        {"GET", path, headers, "", "", read_timeout},
        [&](const HttpsClient::Head& h) {
          code = h.status;
          retry_after = h.retry_after;
          return true;
        },
        [&](const char* data, size_t n) {
          if (code != 200) {
            if (error_body.size() < 65536) error_body.append(data, n);
            return true;
          }
          split_status = splitter.Feed(data, n, [&](const std::string& line) {
            if (!stopped_by_caller && !on_line(line)) stopped_by_caller = true;
          });
          return split_status.ok() && !stopped_by_caller;
        });
    // As for other requests, 0 when the transport failed (here: after the answer's head).
    bool whole = e == HttpsClient::Error::kNone || e == HttpsClient::Error::kCanceled;
    Observe("watch", path, whole ? code : 0);
    if (stopped_by_caller) return Status::Ok();
    if (!split_status.ok()) return split_status.Wrap("watch " + path);
    if (code == 401 && ep_->token) ep_->token->Invalidate();
    if (code != 0 && code != 200) {
      last_retry_after_ = retry_after;
      return Status(k8s_detail::CodeFor(code), StatusMessage(code, error_body));
    }
    if (e != HttpsClient::Error::kNone && e != HttpsClient::Error::kCanceled) return Unreachable("watch " + path, e);
    return Status::Ok();
  }

  // Aborts a request or stream in progress on another thread.
  void Stop() {
    if (cli_) cli_->Stop();
  }

  // The Retry-After of the last answer (request or stream), in seconds (0 if none).
  int last_retry_after() const { return last_retry_after_; }

 private:
  // Accept, User-Agent and the bearer token, as header lines.
  std::string Headers() const {
    std::string h = "Accept: application/json\r\nUser-Agent: hostpath-provisioner\r\n";
    if (ep_->token) {
      std::string t = ep_->token->Get();
      if (!t.empty()) h.append("Authorization: Bearer ").append(t).append("\r\n");
    }
    return h;
  }

  void Observe(const std::string& verb, const std::string& path, int code) const {
    if (ep_->observer) ep_->observer(verb, k8s_detail::ResourceOf(path), code);
  }

  static std::string VerbOf(const std::string& method, const std::string& path) {
    if (method == "GET") {
      // a name after the collection makes it a get; we only GET collections to list
      return path.find("watch=") != std::string::npos ? "watch" : "list";
    }
    if (method == "POST") return "create";
    if (method == "PUT") return "update";
    if (method == "PATCH") return "patch";
    return "delete";
  }

  // A transport failure as an Unavailable status that says what failed and where.
  Status Unreachable(const std::string& what, HttpsClient::Error e) const {
    std::string why = cli_->Describe(e);
    if (e == HttpsClient::Error::kVerify)
      why = "the server's TLS certificate was refused: " + std::string(X509_verify_cert_error_string(cli_->verify_result())) +
            " (it must be signed by the configured CA and name " + ep_->host + ")";
    return Status(Status::kUnavailable, what + ": " + why + " talking to " + ep_->description);
  }

  Result<HttpResponse> Once(const std::string& method, const std::string& path, const std::string& body,
                            const std::string& content_type, std::chrono::seconds timeout) {
    return std::move(AllOnce({{method, path, body, content_type}}, timeout)[0]);
  }

  // The calls sent once, pipelined (see RequestAll): a result each.
  std::vector<Result<HttpResponse>> AllOnce(const std::vector<Call>& calls, std::chrono::seconds timeout) {
    std::vector<Result<HttpResponse>> out;
    for (const Call& c : calls) {
      if (c.method != "POST" && c.method != "PUT" && c.method != "PATCH" && c.method != "DELETE" && c.method != "GET")
        return std::vector<Result<HttpResponse>>(calls.size(), Status::Error("unsupported method " + c.method));
    }
    last_retry_after_ = 0;
    std::string headers = Headers();
    std::vector<HttpsClient::Request> reqs;
    for (const Call& c : calls)
      reqs.push_back({c.method, c.path, headers, c.body.empty() ? std::string_view() : std::string_view(c.content_type),
                      c.body, timeout});
    std::vector<HttpsClient::Response> res(calls.size());
    size_t answered = 0;
    HttpsClient::Error e = cli_->SendAll(reqs.data(), reqs.size(), res.data(), &answered);
    for (size_t i = 0; i < calls.size(); ++i) {
      Observe(VerbOf(calls[i].method, calls[i].path), calls[i].path, i < answered ? res[i].status : 0);
      if (i >= answered) {
        out.push_back(Unreachable(calls[i].method + " " + calls[i].path, e));
        continue;
      }
      HttpResponse r;
      r.status = res[i].status;
      r.body = std::move(res[i].body);
      r.retry_after = res[i].retry_after;
      if (r.retry_after > last_retry_after_) last_retry_after_ = r.retry_after;
      out.push_back(std::move(r));
    }
    return out;
  }

  std::shared_ptr<const ApiEndpoint> ep_;
  std::unique_ptr<HttpsClient> cli_;
  int last_retry_after_ = 0;
};

// A non-2xx answer as a Status ("persistentvolumes \"x\" already exists (AlreadyExists, 409)").
inline Status Check(const Result<HttpResponse>& r, const std::string& what) {
  if (!r.ok()) return r.status().Wrap(what);
  if (r->status >= 200 && r->status < 300) return Status::Ok();
  return Status(k8s_detail::CodeFor(r->status), what + ": " + StatusMessage(r->status, r->body));
}

