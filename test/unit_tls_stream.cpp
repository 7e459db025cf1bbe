// TlsStream through TlsClient, against a scripted TLS server that sees every record.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "k8s.hpp"
#include "test/fake_tls.hpp"
#include "test/scripted_tls_server.hpp"

namespace {

// As main.cpp does: a write to a connection the peer closed is an error, not a signal.
const bool kNoSigpipe = [] { return signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();

// One SSL_read: the plaintext of one record (the server does not read ahead).
std::string ReadRecord(SSL* ssl) {
  char buf[65536];
  int n = SSL_read(ssl, buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// Reads until a whole request (headers, and Content-Length bytes of body) has arrived.
std::string ReadRequest(SSL* ssl) {
  std::string in;
  while (true) {
    size_t end = in.find("\r\n\r\n");
    if (end != std::string::npos) {
      size_t cl = in.find("Content-Length: ");
      size_t body = cl == std::string::npos || cl > end ? 0 : std::stoul(in.substr(cl + 16));
      if (in.size() >= end + 4 + body) return in;
    }
    std::string more = ReadRecord(ssl);
    if (more.empty()) return in;
    in += more;
  }
}

// Runs on the server's thread, so it asserts nothing (Catch's assertions are not thread-safe):
// a write that fails shows as a failed or short answer on the client's side.
void WriteAll(SSL* ssl, const std::string& s) { SSL_write(ssl, s.data(), static_cast<int>(s.size())); }

std::string Ok(const std::string& body) {
  return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace

TEST_CASE("a request's header block and body reach the server as one record") {
  std::string first;
  ScriptedServer server([&](SSL* ssl) {
    first = ReadRecord(ssl);
    WriteAll(ssl, Ok("done"));
  });
  auto cli = server.Client();
  auto res = cli->Post("/apis/x", "{\"spec\":1}", "application/json");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->body == "done");
  CHECK(first.rfind("POST /apis/x HTTP/1.1\r\n", 0) == 0);
  CHECK(first.size() >= 10);
  CHECK(first.substr(first.size() - 10) == "{\"spec\":1}");
}

TEST_CASE("answers are read whole however the server cuts them into records") {
  std::string big(1 << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 997) big[i] = static_cast<char>('a' + i % 26);
  std::string small = "{\"kind\":\"Status\",\"message\":\"" + std::string(3000, 'm') + "\"}";
  ScriptedServer server([&](SSL* ssl) {
    std::string req = ReadRequest(ssl);
    if (req.find("GET /bytes ") == 0) {
      for (char c : Ok(small)) WriteAll(ssl, std::string(1, c));  // one record per byte
      req = ReadRequest(ssl);
    }
    if (req.find("GET /big ") == 0) WriteAll(ssl, Ok(big));  // larger than the stream's buffer
  });
  auto cli = server.Client();
  auto a = cli->Get("/bytes");
  REQUIRE(a);
  CHECK(a->body == small);
  auto b = cli->Get("/big");
  REQUIRE(b);
  CHECK(b->body.size() == big.size());
  CHECK(b->body == big);
  CHECK(server.accepted() == 1);  // both on one kept-alive connection
}

TEST_CASE("a chunked answer (a watch) is read line by line as it arrives") {
  ScriptedServer server([&](SSL* ssl) {
    ReadRequest(ssl);
    WriteAll(ssl, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (std::string line : {"{\"type\":\"ADDED\"}\n", "{\"type\":\"MODIFIED\"}\n"})
      WriteAll(ssl, httplib::detail::from_i_to_hex(line.size()) + "\r\n" + line + "\r\n");
    WriteAll(ssl, "0\r\n\r\n");
  });
  auto cli = server.Client();
  std::string got;
  auto res = cli->Get("/w", [&](const char* d, size_t n) {
    got.append(d, n);
    return true;
  });
  REQUIRE(res);
  CHECK(got == "{\"type\":\"ADDED\"}\n{\"type\":\"MODIFIED\"}\n");
}

TEST_CASE("failures end a request instead of hanging it") {
  std::atomic<bool> release{false};
  SECTION("no answer: the read timeout ends it") {
    ScriptedServer server([&](SSL* ssl) {
      ReadRequest(ssl);
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    });
    auto cli = server.Client();
    cli->set_read_timeout(std::chrono::seconds(1));
    auto t0 = std::chrono::steady_clock::now();
    auto res = cli->Get("/slow");
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    release = true;
    CHECK(!res);
    CHECK(res.error() == httplib::Error::Read);
    CHECK(waited >= 0.9);  // it waited for the answer, and gave up (no hang)
  }
  SECTION("the connection closes half-way through the body") {
    ScriptedServer server([&](SSL* ssl) {
      ReadRequest(ssl);
      WriteAll(ssl, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b");
    });
    auto cli = server.Client();
    auto res = cli->Get("/cut");
    CHECK(!res);
  }
  SECTION("stop() from another thread ends a stream that waits for data") {
    ScriptedServer server([&](SSL* ssl) {
      ReadRequest(ssl);
      WriteAll(ssl, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    });
    auto cli = server.Client();
    cli->set_read_timeout(std::chrono::seconds(60));
    std::atomic<bool> got_headers{false};
    std::thread stopper([&] {
      while (!got_headers) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      cli->stop();
    });
    auto res = cli->Get(
        "/w", [&](const httplib::Response&) { return got_headers = true; }, [](const char*, size_t) { return true; });
    stopper.join();
    release = true;
    CHECK(got_headers);
    CHECK(!res);
  }
}
