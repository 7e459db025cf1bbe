// The fake API server's HTTPS transport: one thread, one epoll loop, non-blocking TLS, and
// HTTP/1.1 as the API server's clients speak it (keep-alive; bodies with Content-Length or
// chunked; answers with Content-Length, or chunked for watches).
//
// One thread reads what has arrived on every connection, answers it, and gives each open watch
// everything written meanwhile in one write, as kube-apiserver's watches batch what is queued.
// A held request (a pause, a delay) holds its connection, not the server; the connections can
// be dropped at once without TLS close_notify (an API server that restarts).
//
// A request is answered by an Exchange that the handler makes. The loop asks it for its bytes
// at once, then after every round in which a request was answered (anything may have changed)
// and when the time it asked for comes, until it says it is done. The loop never blocks in an
// Exchange: delays are times to be asked again.
//
// A round: read what has arrived, answer it and send the answers (again, while more keeps
// arriving, up to kRoundsPerFinish times), run the background work (the fake's controllers,
// which react to a write after it was answered, as real controllers do), and then give the
// exchanges that follow the store (watches) what all of that wrote, in one write each.
#pragma once
#include <openssl/types.h>
#include <sys/epoll.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.hpp"

// httplib's request and response are the values this transport parses into and answers from;
// only the .cpp files that fill or read them include <httplib.h>.
namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace fake {

using Clock = std::chrono::steady_clock;

// A request being answered (see the top of this file).
class Exchange {
 public:
  virtual ~Exchange() = default;
  // Appends the answer's next bytes to `out`; true when the answer is complete. Otherwise it may
  // lower `wake` to the latest time it must be asked again.
  virtual bool Step(std::string& out, Clock::time_point now, Clock::time_point& wake) = 0;
  // True for answers that follow the store as it changes (watches): asked only at the end of
  // a round, after the background work.
  virtual bool FollowsStore() const { return false; }
};

// Makes the Exchange that answers a request.
using Handler = std::function<std::unique_ptr<Exchange>(httplib::Request)>;
// Work that no answer waits for, done after each round's answers were sent.
using Background = std::function<void()>;

// Appends the bytes of a complete answer: status line, res's headers, Content-Length and body.
void AppendResponse(std::string& out, const httplib::Response& res);

// One chunk of a chunked answer (an empty `data` would end the answer: use ChunkedEnd for that).
void AppendChunk(std::string& out, std::string_view data);
constexpr std::string_view kChunkedEnd = "0\r\n\r\n";

namespace https_detail {

enum class Parse { kIncomplete, kOk, kBad, kTooLarge };

std::string Lower(std::string s);

// The decoded body of a chunked request from `in` (after the headers); `used` is its length.
Parse Dechunk(std::string_view in, size_t max, std::string& body, size_t& used);

// Sets the request's target, its percent-decoded path and its query parameters, as httplib's
// server does.
void SetTarget(httplib::Request& req, std::string target);

// One request from the start of `in`: fills req (its path and query by SetTarget), `used` (the
// bytes it took) and `close` (whether the client asked to close the connection after this
// answer) on kOk.
Parse ParseRequest(std::string_view in, size_t max_body, httplib::Request& req, size_t& used, bool& close);

}  // namespace https_detail

class HttpsLoop {
 public:
  struct Options {
    int idle_seconds = 30;             // a connection with no request in progress is closed after
    size_t max_body = 64 << 20;        // larger bodies: 413
    size_t max_unsent = 256u << 20;    // a client that reads slower than this is cut off
  };

  HttpsLoop(Handler handler, Background background, Options opts);
  ~HttpsLoop();
  HttpsLoop(const HttpsLoop&) = delete;
  HttpsLoop& operator=(const HttpsLoop&) = delete;

  // Sets up TLS with the server's certificate and key and listens on 127.0.0.1:port (0: any
  // free port); returns the port. Run() then serves.
  Result<int> Listen(X509* cert, EVP_PKEY* key, int port);

  // Serves until Stop(): then every exchange is asked once more (a watch sees that the server
  // stops and ends its answer), what can be sent without waiting is sent, and all is closed.
  void Run();

  // Makes the server slower, evenly: after each round of work, it spins for `fraction` of the
  // CPU time that round took (1/3: as if it had three quarters of its CPU, with no pause longer
  // than a fraction of a round). A test control (make bench's bottleneck runs).
  void SetExtraWork(double fraction) { extra_work_ = fraction < 0 ? 0 : fraction; }

  // Makes the loop look at every exchange again (after a change made from another thread).
  void Wake();
  void Stop();
  // Drops every connection once what is already answered has gone out, as an API server that
  // restarts does: no TLS close_notify, no end of the watches' answers.
  void ResetConnections();

 private:
  struct Conn {
    int fd = -1;
    SSL* ssl = nullptr;
    bool handshaken = false;
    bool peer_closed = false;  // EOF or an error on reading: nothing more will come
    bool close_after = false;  // close once the current answer is sent
    std::string in, out;
    size_t out_sent = 0;
    std::unique_ptr<Exchange> ex;  // the request being answered
    Clock::time_point wake = Clock::time_point::max();
    Clock::time_point idle_since = Clock::now();
    uint32_t interest = 0;
  };

  int TimeoutMs() const;

  void Accept();

  void Interest(Conn& c, uint32_t interest, int op = EPOLL_CTL_MOD);

  // Handshakes, reads what has arrived and sends what waits, as far as the socket allows.
  void OnReady(Conn& c, uint32_t events);

  // OpenSSL's error queue (per thread: this loop's) must be empty before a call whose
  // SSL_get_error is asked. Only failed calls leave entries, so Read and Send empty it after
  // each failure.
  void Read(Conn& c);

  void Send(Conn& c);

  // The end of a round: the background work, then every exchange, watches included; again
  // while that answers requests (pipelined ones): their writes need the background work too.
  void Finish();

  // Asks the exchanges for their bytes (those that follow the store only with `followers`) and
  // starts the requests that have arrived. Repeats while requests are answered: a write may be
  // news for another connection's watch. True if a request was answered.
  bool ServeAll(bool followers);

  // Sends what waits, as far as the sockets take it, and closes what is done.
  void SendAll();

  // Runs the connection's exchanges as far as they go; true if one was started or finished.
  bool Serve(Conn& c, Clock::time_point now);

  // Closes the connection; with `flush`, first sends what can go without waiting.
  void Close(Conn& c, bool flush);

  static int64_t ThreadCpuNs();
  // Spins for extra_work_ x `worked` ns of this thread's CPU time.
  void Burn(int64_t worked);

  static constexpr int kRoundsPerFinish = 8;  // rounds of answers at most before the background work and watches

  Handler handler_;
  Background background_;
  Options opts_;
  SSL_CTX* ctx_ = nullptr;
  int listen_fd_ = -1, epoll_fd_ = -1, wake_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<bool> reset_{false};
  std::atomic<double> extra_work_{0};
  std::map<int, std::unique_ptr<Conn>> conns_;
};

}  // namespace fake
