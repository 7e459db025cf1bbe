// ApiConnection (api_connection.hpp) over cpp-httplib's client: what it sends, how it reads
// answers and watch streams, the bearer token and its 401 retry, Retry-After, the observer, and
// what a user reads when the transport fails; against a scripted TLS server that sees every
// byte and writes raw answers.
#include <httplib.h>
#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "kube/api_connection.hpp"
#include "test/fake/fake_tls.hpp"
#include "test/support/scripted_tls_server.hpp"

namespace {

// As main.cpp does: a write to a connection the peer closed is an error, not a signal.
const bool kNoSigpipe = [] { return signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();

// One SSL_read: the plaintext of one record (the server does not read ahead).
std::string ReadRecord(SSL* ssl) {
  char buf[65536];
  int n = SSL_read(ssl, buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// Reads until a whole request (headers, and Content-Length bytes of body) has arrived; "" if
// the connection ended first.
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
    if (more.empty()) return "";
    in += more;
  }
}

// Runs on the server's thread, so it asserts nothing (Catch's assertions are not thread-safe):
// a write that fails shows as a failed or short answer on the client's side.
void WriteAll(SSL* ssl, const std::string& s) { SSL_write(ssl, s.data(), static_cast<int>(s.size())); }

// `data` as one chunk of a chunked body.
std::string Chunk(const std::string& data) {
  char size[16];
  std::snprintf(size, sizeof size, "%zx", data.size());
  return size + std::string(";ext=1\r\n") + data + "\r\n";
}

std::string Ok(const std::string& body) {
  return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// The value of header `name` in a request as the server read it ("" if absent).
std::string HeaderOf(const std::string& request, const std::string& name) {
  size_t at = request.find("\r\n" + name + ": ");
  if (at == std::string::npos) return "";
  at += name.size() + 4;
  return request.substr(at, request.find("\r\n", at) - at);
}

std::unique_ptr<ApiConnection> Connect(const ApiCredentials& creds, RequestObserver observer = nullptr) {
  auto ep = ApiEndpoint::From(creds);
  REQUIRE(ep.ok());
  (*ep)->observer = std::move(observer);
  auto conn = std::make_unique<ApiConnection>(*ep);
  REQUIRE(conn->Init().ok());
  return conn;
}

// Sets `flag` when it goes out of scope: a server script that waits for it ends before its
// server is destroyed, even when a REQUIRE ends the test early.
struct Release {
  std::atomic<bool>& flag;
  ~Release() { flag = true; }
};

std::string Described(const ScriptedServer& server) {
  return " talking to https://127.0.0.1:" + std::to_string(server.port()) + " (test)";
}

// A token file in a fresh directory, rewritten as kubelet does (a new file renamed over it).
struct TokenFile {
  TokenFile() {
    char tmpl[] = "/tmp/hp-http-token-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir = tmpl;
  }
  ~TokenFile() { std::system(("rm -rf '" + dir + "'").c_str()); }
  std::string path() const { return dir + "/token"; }
  void Write(const std::string& t) const {
    std::FILE* f = std::fopen((path() + ".new").c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs(t.c_str(), f);
    std::fclose(f);
    REQUIRE(std::rename((path() + ".new").c_str(), path().c_str()) == 0);
  }
  std::string dir;
};

}  // namespace

TEST_CASE("a request carries the bearer token, Content-Type and -Length and its body; the answer comes back") {
  std::string got;
  ScriptedServer server([&](SSL* ssl) {
    got = ReadRequest(ssl);
    WriteAll(ssl, "HTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\ndone");
  });
  ApiCredentials creds = server.Credentials();
  creds.token = "t0k";
  auto conn = Connect(creds);
  auto r = conn->Request("POST", "/apis/x", "{\"spec\":1}", "application/merge-patch+json");
  REQUIRE(r.ok());
  CHECK(r->status == 201);
  CHECK(r->body == "done");
  CHECK(got.rfind("POST /apis/x HTTP/1.1\r\n", 0) == 0);
  CHECK(HeaderOf(got, "Host") == "127.0.0.1:" + std::to_string(server.port()));
  CHECK(HeaderOf(got, "Authorization") == "Bearer t0k");
  CHECK(HeaderOf(got, "Accept") == "application/json");
  CHECK(HeaderOf(got, "User-Agent") == "hostpath-provisioner");
  CHECK(HeaderOf(got, "Content-Type") == "application/merge-patch+json");
  CHECK(HeaderOf(got, "Content-Length") == "10");
  CHECK(got.size() >= 14);
  CHECK(got.substr(got.size() - 14) == "\r\n\r\n{\"spec\":1}");
}

TEST_CASE("bytes that would bend the request line are percent-encoded in the path") {
  std::string got;
  ScriptedServer server([&](SSL* ssl) {
    got = ReadRequest(ssl);
    WriteAll(ssl, Ok(""));
  });
  auto conn = Connect(server.Credentials());
  const char path[] = "/a b\r\nX: y\xc3\xa9\t\x7f\0z?q=%2F";
  REQUIRE(conn->Request("GET", std::string(path, sizeof path - 1)).ok());
  CHECK(got.rfind("GET /a%20b%0D%0AX:%20y%C3%A9%09%7F%00z?q=%2F HTTP/1.1\r\n", 0) == 0);
  CHECK(HeaderOf(got, "X").empty());
}

TEST_CASE("answers are read whole however the server cuts them into records, over one kept-alive connection") {
  std::string big(1 << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 997) big[i] = static_cast<char>('a' + i % 26);
  std::string small = "{\"kind\":\"Status\",\"message\":\"" + std::string(3000, 'm') + "\"}";
  ScriptedServer server([&](SSL* ssl) {
    std::string req = ReadRequest(ssl);
    if (req.find("GET /bytes ") == 0) {
      for (char c : Ok(small)) WriteAll(ssl, std::string(1, c));  // one record per byte
      req = ReadRequest(ssl);
    }
    if (req.find("GET /big ") == 0) WriteAll(ssl, Ok(big));
  });
  auto conn = Connect(server.Credentials());
  auto a = conn->Request("GET", "/bytes");
  REQUIRE(a.ok());
  CHECK(a->body == small);
  auto b = conn->Request("GET", "/big");
  REQUIRE(b.ok());
  CHECK(b->body.size() == big.size());
  CHECK(b->body == big);
  CHECK(server.accepted() == 1);
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
      auto conn = Connect(server.Credentials());
      for (int i = 0; i < 2; ++i) {
        auto r = conn->Request("GET", "/x");
        REQUIRE(r.ok());
        CHECK(r->body == "ok");
      }
      CHECK(server.accepted() == 2);
    }
  }
  for (bool close_notify : {false, true}) {
    SECTION(close_notify ? "the server closed the idle connection with a TLS close_notify (as Go's server does)"
                         : "the server closed the idle connection without a TLS close_notify") {
      ScriptedServer server([&](SSL* ssl) {
        ReadRequest(ssl);
        WriteAll(ssl, Ok("ok"));
        if (close_notify) SSL_shutdown(ssl);
      });
      auto conn = Connect(server.Credentials());
      for (int i = 0; i < 2; ++i) {
        auto r = conn->Request("GET", "/x");
        REQUIRE(r.ok());
        CHECK(r->body == "ok");
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      CHECK(server.accepted() == 2);
    }
  }
}

TEST_CASE("answers without a body, informational answers before the real one, and Retry-After") {
  std::vector<std::string> seen;
  ScriptedServer server([&](SSL* ssl) {
    seen.push_back(ReadRequest(ssl));
    WriteAll(ssl, "HTTP/1.1 204 No Content\r\n\r\n");
    seen.push_back(ReadRequest(ssl));
    WriteAll(ssl, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 429 Too Many Requests\r\nretry-after: 3\r\ncontent-length: 2\r\n\r\n{}");
    seen.push_back(ReadRequest(ssl));
    WriteAll(ssl, "HTTP/1.1 503 Unavailable\r\nRetry-After: Wed, 21 Oct 2015 07:28:00 GMT\r\nContent-Length: 0\r\n\r\n");
  });
  auto conn = Connect(server.Credentials());
  auto a = conn->Request("DELETE", "/x");
  REQUIRE(a.ok());
  CHECK(a->status == 204);
  CHECK(a->body.empty());
  CHECK(conn->last_retry_after() == 0);
  auto b = conn->Request("GET", "/y");
  REQUIRE(b.ok());
  CHECK(b->status == 429);
  CHECK(b->retry_after == 3);
  CHECK(conn->last_retry_after() == 3);
  CHECK(b->body == "{}");
  auto c = conn->Request("GET", "/z");
  REQUIRE(c.ok());
  CHECK(c->status == 503);
  CHECK(c->retry_after == 0);  // a date is not a number of seconds
  CHECK(conn->last_retry_after() == 0);
  REQUIRE(seen.size() == 3);
  CHECK(seen[0].rfind("DELETE /x HTTP/1.1\r\n", 0) == 0);
  CHECK(HeaderOf(seen[0], "Content-Length").empty());
  CHECK(server.accepted() == 1);
}

TEST_CASE("an answer that is not HTTP as the client reads it fails the request, and says so") {
  for (const char* answer : {"SSH-2.0-OpenSSH\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"}) {
    SECTION(answer) {
      ScriptedServer server([&](SSL* ssl) {
        ReadRequest(ssl);
        WriteAll(ssl, answer);
      });
      auto r = Connect(server.Credentials())->Request("GET", "/x");
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().code() == Status::kUnavailable);
      CHECK(r.status().message() ==
            "GET /x: the connection closed before the answer was complete, or the answer is not HTTP/1.1" +
                Described(server));
    }
  }
}

TEST_CASE("failures end a request instead of hanging it, and say what happened") {
  std::atomic<bool> release{false};
  SECTION("no answer: the read timeout ends it") {
    ScriptedServer server([&](SSL* ssl) {
      ReadRequest(ssl);
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    });
    Release released{release};
    auto conn = Connect(server.Credentials());
    auto t0 = std::chrono::steady_clock::now();
    auto r = conn->Request("GET", "/slow", "", "application/json", std::chrono::seconds(1));
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::kUnavailable);
    CHECK(r.status().message() == "GET /slow: no answer within 1 s" + Described(server));
    CHECK(waited >= 0.9);  // it waited for the answer, and gave up (no hang)
    CHECK(waited < 5);
  }
  SECTION("the connection closes half-way through the body") {
    ScriptedServer server([&](SSL* ssl) {
      ReadRequest(ssl);
      WriteAll(ssl, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b");
    });
    auto r = Connect(server.Credentials())->Request("GET", "/cut");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() ==
          "GET /cut: the connection closed before the answer was complete, or the answer is not HTTP/1.1" +
              Described(server));
  }
  SECTION("nothing listens") {
    int port;
    {
      ScriptedServer gone([](SSL*) {});
      port = gone.port();
    }
    ApiCredentials creds;
    creds.server = "https://127.0.0.1:" + std::to_string(port);
    creds.insecure_skip_tls_verify = true;
    creds.source = "kubeconfig /k";
    auto r = Connect(creds)->Request("GET", "/api/v1/nodes");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::kUnavailable);
    CHECK(r.status().message() == "GET /api/v1/nodes: cannot connect: Connection refused talking to https://127.0.0.1:" +
                                      std::to_string(port) + " (kubeconfig /k)");
  }
  SECTION("the port answers plain HTTP, not TLS") {
    httplib::Server plain;
    int port = plain.bind_to_any_port("127.0.0.1");
    REQUIRE(port > 0);
    std::thread serving([&] { plain.listen_after_bind(); });
    ApiCredentials creds;
    creds.server = "https://127.0.0.1:" + std::to_string(port);
    creds.source = "test";
    auto r = Connect(creds)->Request("GET", "/x");
    plain.stop();
    serving.join();
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::kUnavailable);
    CHECK_THAT(r.status().message(), Catch::StartsWith("GET /x: TLS handshake failed: "));
  }
  SECTION("the host name does not resolve") {
    ApiCredentials creds;
    creds.server = "https://no-such-host.invalid:6443";
    creds.source = "test";
    auto r = Connect(creds)->Request("GET", "/x");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::kUnavailable);
    CHECK_THAT(r.status().message(), Catch::StartsWith("GET /x: cannot resolve no-such-host.invalid: "));
  }
}

TEST_CASE("a 401 makes the token be re-read and the request sent once more") {
  TokenFile token;
  token.Write("old");
  std::vector<std::string> seen;  // "path token" per request, in order
  ScriptedServer server([&](SSL* ssl) {
    while (true) {
      std::string req = ReadRequest(ssl);
      if (req.empty()) return;
      std::string path = req.substr(4, req.find(" HTTP/1.1") - 4);
      std::string auth = HeaderOf(req, "Authorization");
      std::string tok = auth.rfind("Bearer ", 0) == 0 ? auth.substr(7) : "(none)";
      seen.push_back(path + " " + tok);
      WriteAll(ssl, tok == "old" ? "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n" : Ok(path));
    }
  });
  ApiCredentials creds = server.Credentials();
  creds.token_file = token.path();
  auto conn = Connect(creds);
  auto a = conn->Request("GET", "/a");  // the file still holds the refused token: one retry, no more
  REQUIRE(a.ok());
  CHECK(a->status == 401);
  token.Write("new");  // read less than a second ago: only a 401 makes the client look again
  auto b = conn->Request("GET", "/b");
  REQUIRE(b.ok());
  CHECK(b->status == 200);
  CHECK(b->body == "/b");
  CHECK(seen == std::vector<std::string>{"/a old", "/a old", "/b old", "/b new"});
  CHECK(server.accepted() == 1);
}

// With anonymous auth on (the default), a real server answers a request without a token 403
// for system:anonymous, not 401; a 403 to a request that carried a token is RBAC's, final.
TEST_CASE("a 403 to a request sent without a token (an empty token file) makes the token be re-read, as a 401 does") {
  TokenFile token;
  token.Write("");
  std::vector<std::string> seen;  // "path token" per request, in order
  ScriptedServer server([&](SSL* ssl) {
    while (true) {
      std::string req = ReadRequest(ssl);
      if (req.empty()) return;
      std::string path = req.substr(4, req.find(" HTTP/1.1") - 4);
      std::string auth = HeaderOf(req, "Authorization");
      std::string tok = auth.rfind("Bearer ", 0) == 0 ? auth.substr(7) : "(none)";
      seen.push_back(path + " " + tok);
      bool forbidden = tok == "(none)" || path == "/denied";
      WriteAll(ssl, forbidden ? "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n" : Ok(path));
    }
  });
  ApiCredentials creds = server.Credentials();
  creds.token_file = token.path();
  auto conn = Connect(creds);
  auto a = conn->Request("GET", "/a");  // still empty when read again: one retry, no more
  REQUIRE(a.ok());
  CHECK(a->status == 403);
  token.Write("new");  // read less than a second ago: only the refusal makes the client look again
  auto b = conn->Request("GET", "/b");
  REQUIRE(b.ok());
  CHECK(b->status == 200);
  auto denied = conn->Request("GET", "/denied");
  REQUIRE(denied.ok());
  CHECK(denied->status == 403);
  CHECK(seen == std::vector<std::string>{"/a (none)", "/a (none)", "/b (none)", "/b new", "/denied new"});
}

TEST_CASE("the observer hears of each finished request: verb, resource and code (0 when there was no answer)") {
  ScriptedServer server([&](SSL* ssl) {
    while (true) {
      std::string req = ReadRequest(ssl);
      if (req.empty()) return;
      if (req.rfind("GET /api/v1/persistentvolumes?watch", 0) == 0) {
        WriteAll(ssl, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
      } else {
        WriteAll(ssl, "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}");
      }
    }
  });
  std::vector<std::string> heard;
  auto conn = Connect(server.Credentials(), [&](const std::string& verb, const std::string& resource, int code) {
    heard.push_back(verb + " " + resource + " " + std::to_string(code));
  });
  CHECK(conn->Request("POST", "/api/v1/persistentvolumes", "{}").ok());
  CHECK(conn->Request("PUT", "/api/v1/namespaces/ns/events/e", "{}").ok());
  CHECK(conn->Request("PATCH", "/apis/storage.k8s.io/v1/storageclasses/c", "{}").ok());
  CHECK(conn->Request("DELETE", "/api/v1/persistentvolumes/pv").ok());
  CHECK(conn->Request("GET", "/api/v1/persistentvolumeclaims?limit=500").ok());
  CHECK(conn->Request("GET", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/hostpath").ok());
  CHECK(conn->Stream("/api/v1/persistentvolumes?watch=true", [](const std::string&) { return true; },
                     std::chrono::seconds(5))
            .ok());
  CHECK(heard == std::vector<std::string>{"create persistentvolumes 201", "update events 201", "patch storageclasses 201",
                                          "delete persistentvolumes 201", "list persistentvolumeclaims 201",
                                          "get leases 201", "watch persistentvolumes 200"});
  SECTION("no answer") {
    int port;
    {
      ScriptedServer gone([](SSL*) {});
      port = gone.port();
    }
    ApiCredentials creds = server.Credentials();
    creds.server = "https://127.0.0.1:" + std::to_string(port);
    heard.clear();
    auto down = Connect(creds, [&](const std::string& verb, const std::string& resource, int code) {
      heard.push_back(verb + " " + resource + " " + std::to_string(code));
    });
    CHECK_FALSE(down->Request("POST", "/api/v1/namespaces/ns/events", "{}").ok());
    CHECK(heard == std::vector<std::string>{"create events 0"});
  }
}

TEST_CASE("a watch hands over each line as it arrives, across chunks") {
  std::atomic<bool> first_seen{false};
  std::string got;
  ScriptedServer server([&](SSL* ssl) {
    got = ReadRequest(ssl);
    WriteAll(ssl, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    WriteAll(ssl, Chunk("{\"type\":\"ADDED\"}\n{\"type\""));  // a line and a half
    // the rest only after the client has seen the first line: nothing waits for the end
    for (int i = 0; i < 500 && !first_seen; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    WriteAll(ssl, Chunk(":\"MODIFIED\"}\n") + "0\r\n\r\n");
  });
  ApiCredentials creds = server.Credentials();
  creds.token = "w";
  auto conn = Connect(creds);
  std::vector<std::string> lines;
  Status s = conn->Stream(
      "/api/v1/persistentvolumes?watch=true&resourceVersion=5",
      [&](const std::string& line) {
        lines.push_back(line);
        first_seen = true;
        return true;
      },
      std::chrono::seconds(10));
  CHECK(s.ok());
  CHECK(lines == std::vector<std::string>{"{\"type\":\"ADDED\"}", "{\"type\":\"MODIFIED\"}"});
  CHECK(got.rfind("GET /api/v1/persistentvolumes?watch=true&resourceVersion=5 HTTP/1.1\r\n", 0) == 0);
  CHECK(HeaderOf(got, "Authorization") == "Bearer w");
}

TEST_CASE("a watch ends when on_line says so, when nothing arrives in time, and on Stop()") {
  std::atomic<bool> release{false};
  auto endless = [&](SSL* ssl) {  // a line, then nothing until the client goes or the test ends
    ReadRequest(ssl);
    WriteAll(ssl, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    WriteAll(ssl, Chunk("one\n") + Chunk("two\n"));
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  };
  ScriptedServer server(endless);
  Release released{release};
  auto conn = Connect(server.Credentials());
  std::vector<std::string> lines;
  auto t0 = std::chrono::steady_clock::now();
  auto waited = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  SECTION("on_line returns false: the watch ends at once, ok") {
    Status s = conn->Stream(
        "/w",
        [&](const std::string& line) {
          lines.push_back(line);
          return false;
        },
        std::chrono::seconds(30));
    CHECK(s.ok());
    CHECK(lines == std::vector<std::string>{"one"});
    CHECK(waited() < 5);
  }
  SECTION("no data within the read timeout: Unavailable, and why") {
    Status s = conn->Stream(
        "/w",
        [&](const std::string& line) {
          lines.push_back(line);
          return true;
        },
        std::chrono::seconds(1));
    CHECK(s.code() == Status::kUnavailable);
    CHECK(s.message() == "watch /w: no answer within 1 s" + Described(server));
    CHECK(lines == std::vector<std::string>{"one", "two"});
    CHECK(waited() >= 0.9);
    CHECK(waited() < 5);
  }
  SECTION("Stop() from another thread: the watch ends, ok") {
    std::atomic<bool> seen{false};
    std::thread stopper([&] {
      while (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      conn->Stop();
    });
    Status s = conn->Stream(
        "/w",
        [&](const std::string& line) {
          lines.push_back(line);
          seen = true;
          return true;
        },
        std::chrono::seconds(60));
    stopper.join();
    CHECK(s.ok());
    CHECK(lines == std::vector<std::string>{"one", "two"});
    CHECK(waited() < 5);
  }
}

TEST_CASE("a watch answered with an error gives its Status and Retry-After; a 401 makes the token be re-read") {
  TokenFile token;
  token.Write("old");
  std::vector<std::string> tokens;
  ScriptedServer server([&](SSL* ssl) {
    std::string req = ReadRequest(ssl);
    tokens.push_back(HeaderOf(req, "Authorization"));
    std::string body = R"({"kind":"Status","message":"slow down","reason":"TooManyRequests","code":429})";
    WriteAll(ssl, "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nContent-Length: " + std::to_string(body.size()) +
                      "\r\n\r\n" + body);
    req = ReadRequest(ssl);
    tokens.push_back(HeaderOf(req, "Authorization"));
    WriteAll(ssl, "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n");
    req = ReadRequest(ssl);
    tokens.push_back(HeaderOf(req, "Authorization"));
    WriteAll(ssl, "HTTP/1.1 410 Gone\r\nContent-Length: 0\r\n\r\n");
  });
  ApiCredentials creds = server.Credentials();
  creds.token_file = token.path();
  auto conn = Connect(creds);
  auto no_lines = [](const std::string&) { return true; };
  Status s = conn->Stream("/w", no_lines, std::chrono::seconds(5));
  CHECK(s.code() == Status::kUnavailable);
  CHECK_THAT(s.message(), Catch::Contains("slow down"));
  CHECK(conn->last_retry_after() == 7);
  s = conn->Stream("/w", no_lines, std::chrono::seconds(5));
  CHECK(s.code() == Status::kUnauthorized);
  CHECK(conn->last_retry_after() == 0);
  token.Write("new");  // within the second: seen only because the 401 invalidated the token
  s = conn->Stream("/w", no_lines, std::chrono::seconds(5));
  CHECK(s.code() == Status::kGone);
  CHECK(tokens == std::vector<std::string>{"Bearer old", "Bearer old", "Bearer new"});
}
