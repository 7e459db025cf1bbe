// HttpsClient: how it writes requests and reads answers, against a scripted TLS server that
// sees every record and writes raw bytes.
#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "k8s.hpp"
#include "test/fake_tls.hpp"
#include "test/scripted_tls_server.hpp"

namespace {

// As main.cpp does: a write to a connection the peer closed is an error, not a signal.
const bool kNoSigpipe = [] { return signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();

using Error = HttpsClient::Error;

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

HttpsClient::Request Get(std::string_view path, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  return {"GET", path, "", "", "", timeout};
}

}  // namespace

TEST_CASE("a request goes out as one record: request line, Host, headers, Content-Type and -Length, body") {
  std::string first;
  ScriptedServer server([&](SSL* ssl) {
    first = ReadRecord(ssl);
    WriteAll(ssl, Ok("done"));
  });
  auto cli = server.Client();
  HttpsClient::Response res;
  REQUIRE(cli->Send({"POST", "/apis/x", "Authorization: Bearer t\r\n", "application/json", "{\"spec\":1}"}, &res) ==
          Error::kNone);
  CHECK(res.status == 200);
  CHECK(res.body == "done");
  CHECK(first == "POST /apis/x HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(server.port()) +
                     "\r\nAuthorization: Bearer t\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{\"spec\":1}");
}

TEST_CASE("bytes that would bend the request line are percent-encoded in the path") {
  std::string got;
  ScriptedServer server([&](SSL* ssl) {
    got = ReadRequest(ssl);
    WriteAll(ssl, Ok(""));
  });
  HttpsClient::Response res;
  REQUIRE(server.Client()->Send(Get("/a b\r\nX: y\xc3\xa9"), &res) == Error::kNone);
  CHECK(got.rfind("GET /a%20b%0D%0AX:%20y%C3%A9 HTTP/1.1\r\n", 0) == 0);
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
    if (req.find("GET /big ") == 0) WriteAll(ssl, Ok(big));  // larger than the client's buffer
  });
  auto cli = server.Client();
  HttpsClient::Response a, b;
  REQUIRE(cli->Send(Get("/bytes"), &a) == Error::kNone);
  CHECK(a.body == small);
  REQUIRE(cli->Send(Get("/big"), &b) == Error::kNone);
  CHECK(b.body.size() == big.size());
  CHECK(b.body == big);
  CHECK(server.accepted() == 1);  // both on one kept-alive connection
}

TEST_CASE("a chunked answer (a watch) is handed over as it arrives") {
  std::atomic<bool> first_seen{false};
  ScriptedServer server([&](SSL* ssl) {
    ReadRequest(ssl);
    WriteAll(ssl, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nRetry-After: 7\r\n\r\n");
    WriteAll(ssl, "11;ext=1\r\n{\"type\":\"ADDED\"}\n\r\n");
    // the next chunk only after the client has seen the first: nothing waits for the end
    for (int i = 0; i < 500 && !first_seen; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    WriteAll(ssl, "14\r\n{\"type\":\"MODIFIED\"}\n\r\n0\r\nX-Trailer: 1\r\n\r\n");
  });
  auto cli = server.Client();
  std::string got;
  int status = 0, retry_after = 0;
  Error e = cli->Send(
      Get("/w"),
      [&](const HttpsClient::Head& h) {
        status = h.status;
        retry_after = h.retry_after;
        return true;
      },
      [&](const char* d, size_t n) {
        got.append(d, n);
        if (got.find('\n') != std::string::npos) first_seen = true;
        return true;
      });
  CHECK(e == Error::kNone);
  CHECK(first_seen);
  CHECK(status == 200);
  CHECK(retry_after == 7);
  CHECK(got == "{\"type\":\"ADDED\"}\n{\"type\":\"MODIFIED\"}\n");
}

TEST_CASE("when the connection may not be used again, the next request opens a new one") {
  struct Case {
    const char* what;
    std::string answer;
  };
  for (const Case& c : {Case{"the server said Connection: close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"},
                        Case{"an HTTP/1.0 answer", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"},
                        Case{"the body ended with the connection", "HTTP/1.1 200 OK\r\n\r\nok"}}) {
    SECTION(c.what) {
      ScriptedServer server([&](SSL* ssl) {
        ReadRequest(ssl);
        WriteAll(ssl, c.answer);
        SSL_shutdown(ssl);
      });
      auto cli = server.Client();
      for (int i = 0; i < 2; ++i) {
        HttpsClient::Response r;
        REQUIRE(cli->Send(Get("/x"), &r) == Error::kNone);
        CHECK(r.body == "ok");
      }
      CHECK(server.accepted() == 2);
    }
  }
  SECTION("the server closed the kept-alive connection while it was idle") {
    ScriptedServer server([&](SSL* ssl) {
      ReadRequest(ssl);
      WriteAll(ssl, Ok("ok"));
      // then it closes, unasked, as API servers do with idle connections
    });
    auto cli = server.Client();
    for (int i = 0; i < 2; ++i) {
      HttpsClient::Response r;
      REQUIRE(cli->Send(Get("/x"), &r) == Error::kNone);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    CHECK(server.accepted() == 2);
  }
}

TEST_CASE("answers without a body, and informational answers before the real one") {
  ScriptedServer server([&](SSL* ssl) {
    ReadRequest(ssl);
    WriteAll(ssl, "HTTP/1.1 204 No Content\r\n\r\n");
    ReadRequest(ssl);
    WriteAll(ssl, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 429 Too Many Requests\r\nretry-after: 3\r\ncontent-length: 2\r\n\r\n{}");
  });
  auto cli = server.Client();
  HttpsClient::Response a, b;
  REQUIRE(cli->Send({"DELETE", "/x", "", "", ""}, &a) == Error::kNone);
  CHECK(a.status == 204);
  CHECK(a.body.empty());
  REQUIRE(cli->Send(Get("/y"), &b) == Error::kNone);
  CHECK(b.status == 429);
  CHECK(b.retry_after == 3);
  CHECK(b.body == "{}");
  CHECK(server.accepted() == 1);
}

TEST_CASE("an answer that is not HTTP as we read it fails the request, and says why") {
  struct Case {
    const char* answer;
    const char* says;
  };
  for (const Case& c : {Case{"SSH-2.0-OpenSSH\r\n\r\n", "bad status line \"SSH-2.0-OpenSSH\""},
                        Case{"HTTP/1.1 2000 OK\r\n\r\n", "bad status line \"HTTP/1.1 2000 OK\""},
                        Case{"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "bad Content-Length \"-1\""},
                        Case{"HTTP/1.1 200 OK\r\nno colon\r\n\r\n", "bad header line \"no colon\""},
                        Case{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size \"zz\""},
                        Case{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
                             "a chunk is longer than its size"}}) {
    SECTION(c.says) {
      ScriptedServer server([&](SSL* ssl) {
        ReadRequest(ssl);
        WriteAll(ssl, c.answer);
      });
      auto cli = server.Client();
      HttpsClient::Response r;
      Error e = cli->Send(Get("/x"), &r);
      CHECK(e == Error::kProtocol);
      CHECK(cli->Describe(e) == std::string("the answer is not valid HTTP/1.1: ") + c.says);
    }
  }
  SECTION("headers without end") {
    ScriptedServer server([&](SSL* ssl) {
      ReadRequest(ssl);
      WriteAll(ssl, "HTTP/1.1 200 OK\r\n");
      for (int i = 0; i < 100; ++i) WriteAll(ssl, "X-Filler: " + std::string(1000, 'f') + "\r\n");
    });
    HttpsClient::Response r;
    auto cli = server.Client();
    CHECK(cli->Send(Get("/x"), &r) == Error::kProtocol);
    CHECK(cli->Describe(Error::kProtocol) == "the answer is not valid HTTP/1.1: a header or chunk line longer than 65536 bytes");
  }
}

TEST_CASE("failures end a request instead of hanging it") {
  std::atomic<bool> release{false};
  SECTION("no answer: the read timeout ends it") {
    ScriptedServer server([&](SSL* ssl) {
      ReadRequest(ssl);
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    });
    auto cli = server.Client();
    auto t0 = std::chrono::steady_clock::now();
    HttpsClient::Response r;
    Error e = cli->Send(Get("/slow", std::chrono::seconds(1)), &r);
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    release = true;
    CHECK(e == Error::kTimeout);
    CHECK(cli->Describe(e) == "no answer within 1 s");
    CHECK(waited >= 0.9);  // it waited for the answer, and gave up (no hang)
  }
  SECTION("the connection closes half-way through the body") {
    ScriptedServer server([&](SSL* ssl) {
      ReadRequest(ssl);
      WriteAll(ssl, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b");
    });
    HttpsClient::Response r;
    auto cli = server.Client();
    Error e = cli->Send(Get("/cut"), &r);
    CHECK(e == Error::kClosed);
    CHECK(cli->Describe(e) == "the connection closed before the answer was complete");
  }
  SECTION("nothing listens") {
    int port;
    {
      ScriptedServer gone([](SSL*) {});
      port = gone.port();
    }
    auto tls = TlsContext::Make({"", "", "", false});
    REQUIRE(tls.ok());
    HttpsClient cli(*tls, "127.0.0.1", port);
    HttpsClient::Response r;
    Error e = cli.Send(Get("/x"), &r);
    CHECK(e == Error::kConnect);
    CHECK(cli.Describe(e) == "cannot connect: Connection refused");
  }
  SECTION("Stop() from another thread ends a stream that waits for data") {
    ScriptedServer server([&](SSL* ssl) {
      ReadRequest(ssl);
      WriteAll(ssl, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    });
    auto cli = server.Client();
    std::atomic<bool> got_head{false};
    std::thread stopper([&] {
      while (!got_head) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      cli->Stop();
    });
    Error e = cli->Send(
        Get("/w", std::chrono::seconds(60)), [&](const HttpsClient::Head&) { return got_head = true; },
        [](const char*, size_t) { return true; });
    stopper.join();
    release = true;
    CHECK(got_head);
    CHECK(e == Error::kCanceled);
  }
}

TEST_CASE("pipelined requests go out in one record and their answers are read in order") {
  std::string first;
  ScriptedServer server([&](SSL* ssl) {
    first = ReadRecord(ssl);
    // the answers cut at odd places, the second split across records
    WriteAll(ssl, Ok("one") + "HTTP/1.1 201 Created\r\nContent-Le");
    WriteAll(ssl, "ngth: 3\r\n\r\ntwo" + Ok("three"));
  });
  auto cli = server.Client();
  HttpsClient::Request rs[] = {Get("/1"), {"POST", "/2", "", "application/json", "{}"}, Get("/3")};
  HttpsClient::Response out[3];
  size_t answered = 99;
  REQUIRE(cli->SendAll(rs, 3, out, &answered) == Error::kNone);
  CHECK(answered == 3);
  CHECK(out[0].status == 200);
  CHECK(out[0].body == "one");
  CHECK(out[1].status == 201);
  CHECK(out[1].body == "two");
  CHECK(out[2].body == "three");
  std::string host = "Host: 127.0.0.1:" + std::to_string(server.port()) + "\r\n";
  CHECK(first == "GET /1 HTTP/1.1\r\n" + host + "\r\nPOST /2 HTTP/1.1\r\n" + host +
                     "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}GET /3 HTTP/1.1\r\n" + host + "\r\n");
  CHECK(server.accepted() == 1);
}

TEST_CASE("pipelined requests: what was answered before the connection ended is told apart from the rest") {
  SECTION("the server closes after the first answer") {
    ScriptedServer server([&](SSL* ssl) {
      ReadRequest(ssl);
      WriteAll(ssl, Ok("one"));
    });
    auto cli = server.Client();
    HttpsClient::Request rs[] = {Get("/1"), Get("/2")};
    HttpsClient::Response out[2];
    size_t answered = 0;
    CHECK(cli->SendAll(rs, 2, out, &answered) == Error::kClosed);
    CHECK(answered == 1);
    CHECK(out[0].body == "one");
  }
  SECTION("the server answers the first with Connection: close") {
    ScriptedServer server([&](SSL* ssl) {
      ReadRequest(ssl);
      WriteAll(ssl, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\none");
      SSL_shutdown(ssl);
    });
    auto cli = server.Client();
    HttpsClient::Request rs[] = {Get("/1"), Get("/2"), Get("/3")};
    HttpsClient::Response out[3];
    size_t answered = 0;
    CHECK(cli->SendAll(rs, 3, out, &answered) == Error::kClosed);
    CHECK(answered == 1);
    // the next request goes over a new connection
    HttpsClient::Response r;
    CHECK(cli->Send(Get("/4"), &r) == Error::kNone);
    CHECK(server.accepted() == 2);
  }
}

namespace {

std::shared_ptr<ApiEndpoint> EndpointWithTokenFile(const ScriptedServer& server, const std::string& token_file) {
  ApiCredentials creds;
  creds.server = "https://127.0.0.1:" + std::to_string(server.port());
  creds.ca_pem = server.ca_pem();
  creds.token_file = token_file;
  creds.source = "test";
  auto ep = ApiEndpoint::From(creds);
  REQUIRE(ep.ok());
  return *ep;
}

}  // namespace

TEST_CASE("ApiConnection::RequestAll: answers in order, a 401 re-reads the token and sends those calls again") {
  char dir_tmpl[] = "/tmp/requestall-XXXXXX";
  REQUIRE(::mkdtemp(dir_tmpl) != nullptr);
  const std::string dir = dir_tmpl, token = dir + "/token";
  auto write_token = [&](const std::string& t) {  // a new file, as kubelet writes one
    std::FILE* f = std::fopen((token + ".new").c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs(t.c_str(), f);
    std::fclose(f);
    REQUIRE(std::rename((token + ".new").c_str(), token.c_str()) == 0);
  };
  write_token("old");
  std::vector<std::string> seen;  // "path token" per request, in order
  ScriptedServer server([&](SSL* ssl) {
    std::string in;
    size_t pos = 0;  // where the next request starts
    while (true) {
      std::string more = ReadRecord(ssl);
      if (more.empty()) return;
      in += more;
      std::string out;  // the answers of every whole request that came, in order
      while (true) {
        size_t end = in.find("\r\n\r\n", pos);
        if (end == std::string::npos) break;
        std::string head = in.substr(pos, end - pos);
        size_t cl = head.find("Content-Length: ");
        size_t body = cl == std::string::npos ? 0 : std::stoul(head.substr(cl + 16));
        if (in.size() < end + 4 + body) break;
        pos = end + 4 + body;
        std::string path = head.substr(head.find(' ') + 1, head.find(" HTTP/1.1") - head.find(' ') - 1);
        size_t auth = head.find("Authorization: Bearer ");
        std::string tok = auth == std::string::npos ? "" : head.substr(auth + 22, head.find("\r\n", auth) - auth - 22);
        seen.push_back(path + " " + tok);
        if (path == "/b" && tok == "old") {
          out += "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n";
        } else {
          out += "HTTP/1.1 201 Created\r\nContent-Length: " + std::to_string(path.size()) + "\r\n\r\n" + path;
        }
      }
      if (!out.empty()) WriteAll(ssl, out);
    }
  });
  auto ep = EndpointWithTokenFile(server, token);
  ApiConnection conn(ep);
  REQUIRE(conn.Init().ok());
  REQUIRE(conn.Request("GET", "/first").ok());  // the token "old" is read, and kept for a second
  write_token("new");
  std::vector<ApiConnection::Call> calls = {{"POST", "/a", "{}"}, {"POST", "/b", "{}"}, {"POST", "/c", "{}"}};
  auto got = conn.RequestAll(calls);
  REQUIRE(got.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    REQUIRE(got[i].ok());
    CHECK(got[i]->status == 201);
  }
  CHECK(got[0]->body == "/a");
  CHECK(got[1]->body == "/b");
  CHECK(got[2]->body == "/c");
  CHECK(seen == std::vector<std::string>{"/first old", "/a old", "/b old", "/c old", "/b new"});
  CHECK(server.accepted() == 1);  // all over one kept-alive connection
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST_CASE("ApiConnection::RequestAll: calls the connection broke before answering come back Unavailable") {
  ScriptedServer server([&](SSL* ssl) {
    ReadRequest(ssl);
    WriteAll(ssl, "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok");  // then it closes
  });
  ApiCredentials creds;
  creds.server = "https://127.0.0.1:" + std::to_string(server.port());
  creds.ca_pem = server.ca_pem();
  creds.source = "test";
  auto ep = ApiEndpoint::From(creds);
  REQUIRE(ep.ok());
  ApiConnection conn(*ep);
  REQUIRE(conn.Init().ok());
  auto got = conn.RequestAll({{"POST", "/a", "{}"}, {"DELETE", "/b", ""}});
  REQUIRE(got.size() == 2);
  REQUIRE(got[0].ok());
  CHECK(got[0]->status == 201);
  REQUIRE_FALSE(got[1].ok());
  CHECK(got[1].status().code() == Status::kUnavailable);
  CHECK(got[1].status().message().rfind("DELETE /b: the connection closed", 0) == 0);
}
