// The transport to the API server: TLS and authentication (CA, client certificate, bearer
// token re-read when it rotates), one keep-alive connection per thread, requests and watch
// streams, and HTTP answers as Status values. No Kubernetes types here: k8s.hpp makes the
// typed calls over an ApiConnection. cpp-httplib and OpenSSL stay in api_connection.cpp.
#pragma once
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "base/status.hpp"
#include "kube/kubeconfig.hpp"

// A bearer token, from a string or a file. The file is re-read when it changes (bound
// service-account tokens rotate) and after the server said 401. Thread-safe.
class TokenSource {
 public:
  TokenSource(std::string token, std::string file) : token_(std::move(token)), file_(std::move(file)) {}

  // The current token; "" when there is none. Re-reads the file if its identity or mtime
  // changed, looking at most once a second (kubelet writes a new token long before the old
  // one expires; a 401 makes the next Get look at once). A file that cannot be read (or
  // stat'ed) leaves the last token in use: the server will say.
  std::string Get();

  // After a 401: read the file again on the next Get, even if it looks unchanged.
  void Invalidate();

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
  std::chrono::seconds request_timeout{30};  // how long a request's send or each read may wait (API_TIMEOUT)

  // Parses "https://host[:port]" (IPv6 hosts in brackets) out of the credentials; the rest is
  // copied, with a TokenSource for the token or token file. Errors (kInvalid) name the
  // source: not an https:// URL, no host, a bad port.
  static Result<std::shared_ptr<ApiEndpoint>> From(const ApiCredentials& c);
};

class KeptAliveClient;  // cpp-httplib's SSLClient, as api_connection.cpp extends it

// One keep-alive HTTPS connection to the API server (cpp-httplib's SSLClient). Not
// thread-safe: each thread (each watch, the worker) has its own. Stop() may be called from
// another thread to abort the request in progress.
class ApiConnection {
 public:
  explicit ApiConnection(std::shared_ptr<const ApiEndpoint> ep);
  ~ApiConnection();

  // Prepares TLS (TLS 1.2 at least; the configured CA alone, or no check when insecure; the
  // server's name checked by OpenSSL, without partial wildcards). Errors (Invalid, naming the
  // endpoint): a CA, or a client certificate and key, that cannot be used.
  Status Init();

  // Sends one request and reads the whole answer. `timeout` bounds each read (0: the
  // endpoint's request_timeout). A 401 makes the
  // token be re-read and the request sent once more; so does a 403 to a request sent without a
  // token (an empty token file: the server answers system:anonymous, as anonymous auth is on
  // by default). Transport failures come back as
  // Unavailable statuses; HTTP errors come back as a response (callers use Check()). An
  // answer longer than `max_body` bytes (0: no limit) is not read on: kTooLarge. A method
  // other than GET, POST, PUT, PATCH and DELETE is an error, and nothing is sent.
  Result<HttpResponse> Request(const std::string& method, const std::string& path, const std::string& body = "",
                               const std::string& content_type = "application/json",
                               std::chrono::seconds timeout = std::chrono::seconds(0), size_t max_body = 0);

  // GETs `path` as a stream and calls on_line for each complete line. Returns when the server
  // ends the stream (ok), on_line returns false (ok), Stop() is called (ok), a read waits longer
  // than read_timeout, or the answer is not 200 (its Status). A 401 (or a 403 without a token)
  // makes the token be re-read for next time.
  Status Stream(const std::string& path, const std::function<bool(const std::string&)>& on_line,
                std::chrono::seconds read_timeout);

  // From another thread: aborts the request or stream in progress.
  void Stop();
  // From another thread: Stop(), and every later request fails at once ("canceled"). A request
  // that began just before may still be sent: call again until its thread has returned.
  void Close();

  // The Retry-After of the last answer (request or stream), in seconds (0 if none).
  int last_retry_after() const { return last_retry_after_; }

 private:
  // The server refused the credentials of the last exchange, or saw none where a token should
  // have been: the token is worth reading again.
  bool RefusedCredentials(int status) const;

  // What came of one exchange: the answer's status (0 if none came) and Retry-After, whether it
  // was read to its end (or until a receiver or Stop() ended it), and if not, why, in words.
  struct Answer {
    int status = 0;
    int retry_after = 0;
    bool whole = false;
    std::string failure;
  };
  using Receiver = std::function<bool(int status, const char* data, size_t n)>;

  // Sends one request and hands the answer's body to `receive` as it arrives (false: stop).
  Answer Send(const std::string& method, const std::string& path, const std::string& body,
              const std::string& content_type, std::chrono::seconds read_timeout, const Receiver& receive);
  Result<HttpResponse> Once(const std::string& method, const std::string& path, const std::string& body,
                            const std::string& content_type, std::chrono::seconds timeout, size_t max_body);
  Status Unreachable(const std::string& what, const std::string& failure) const;
  void Observe(const std::string& verb, const std::string& path, int code) const;

  std::shared_ptr<const ApiEndpoint> ep_;
  std::unique_ptr<KeptAliveClient> cli_;
  std::atomic<bool> stopped_{false};  // Stop() was called during the exchange in progress
  std::atomic<bool> closed_{false};   // Close() was called: no more requests
  int last_retry_after_ = 0;
  bool sent_token_ = false;  // the last exchange carried a bearer token
};

// A non-2xx answer as a Status ("persistentvolumes \"x\" already exists (AlreadyExists, 409)"),
// its code from the HTTP status (401 kUnauthorized, 403 kForbidden, 404 kNotFound, 409
// kConflict, 410 kGone, 400 and 422 kInvalid, 429 and 5xx kUnavailable, others kError). A
// failed request gives its own Status, wrapped with `what`; a 2xx gives Ok.
Status Check(const Result<HttpResponse>& r, const std::string& what);
