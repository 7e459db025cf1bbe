// HTTP/1.1 over one kept-alive TLS connection (tls_client.hpp): the client of k8s.hpp.
//
// It writes a request as one record, and reads the answer's status line, the few headers it
// needs (Content-Length, Transfer-Encoding, Connection, Retry-After) and its body: by length,
// chunked (lists, watches), or up to the close. cpp-httplib's client, used before, spent about
// 93 000 instructions on each request the provisioner made (make bench, callgrind): a
// std::regex on the status line, snprintf for every header, headers in a case-insensitive
// multimap, several std::function layers per read.
//
// One request (or one pipelined group) at a time; Stop() may be called from another thread to
// abort the one in progress.
#pragma once
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "tls_client.hpp"

// s with every byte that keep(byte) refuses written as %XX.
template <typename Keep>
void AppendPercentEncoded(std::string_view s, Keep keep, std::string* out) {
  static const char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : s) {
    if (keep(c)) {
      out->push_back(static_cast<char>(c));
    } else {
      out->push_back('%');
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 15]);
    }
  }
}

class HttpsClient {
 public:
  using Error = TransportError;

  struct Request {
    std::string_view method, path;
    std::string_view headers;  // "Name: value\r\n" lines, added as they are
    std::string_view content_type, body;
    std::chrono::milliseconds read_timeout{std::chrono::seconds(30)};
  };
  struct Head {
    int status = 0;
    int retry_after = 0;  // seconds, from Retry-After; 0 if none
  };
  struct Response : Head {
    std::string body;
  };
  using OnHead = std::function<bool(const Head&)>;             // false: stop reading
  using OnData = std::function<bool(const char*, size_t)>;     // body bytes as they arrive

  HttpsClient(std::shared_ptr<const TlsContext> tls, std::string host, int port)
      : tls_(std::move(tls)), host_(std::move(host)), port_(port) {
    bool v6 = host_.find(':') != std::string::npos;
    host_header_ = v6 ? "[" + host_ + "]" : host_;
    if (port_ != 443) host_header_ += ":" + std::to_string(port_);
  }

  void set_connect_timeout(std::chrono::milliseconds t) { connect_timeout_ = t; }
  void set_write_timeout(std::chrono::milliseconds t) { write_timeout_ = t; }

  // Sends `r` and reads the whole answer into `out`.
  Error Send(const Request& r, Response* out) {
    size_t answered = 0;
    return SendAll(&r, 1, out, &answered);
  }

  // Sends `r`, then hands the answer's head to on_head and its body to on_data as it arrives.
  Error Send(const Request& r, const OnHead& on_head, const OnData& on_data) {
    if (Error e = Begin(RequestText(r), r.read_timeout); e != Error::kNone) return e;
    return End(ReadAnswer(r, on_head, on_data));
  }

  // Sends n requests in one write and reads their answers whole, in order, into outs (HTTP/1.1
  // pipelining: a server answers pipelined requests one after another, as if each had come
  // alone; it saves a round trip, a write and a wake-up on each side per request). *answered
  // counts the answers read whole; after an error the requests past those were sent but not
  // answered, so they may or may not have been done. The first request's read timeout bounds
  // each read. The caller keeps n small: every request is written before any answer is read.
  Error SendAll(const Request* rs, size_t n, Response* outs, size_t* answered) {
    *answered = 0;
    if (n == 0) return Error::kNone;
    std::string text;
    for (size_t i = 0; i < n; ++i) text += RequestText(rs[i]);
    if (Error e = Begin(text, rs[0].read_timeout); e != Error::kNone) return e;
    Error e = Error::kNone;
    for (size_t i = 0; i < n && e == Error::kNone; ++i) {
      Response* out = &outs[i];
      out->body.clear();
      e = ReadAnswer(
          rs[i],
          [out](const Head& h) {
            static_cast<Head&>(*out) = h;
            return true;
          },
          [out](const char* p, size_t len) {
            out->body.append(p, len);
            return true;
          });
      if (e != Error::kNone) break;
      ++*answered;
      if (!keep_alive_ && i + 1 < n) e = Error::kClosed;  // the server will not read the rest
    }
    return End(e);
  }

  // From any thread: ends the request in progress (it returns kCanceled).
  void Stop() { sock_.Abort(); }

  long verify_result() const { return sock_.verify_result(); }

  // The error in words, with what the system said ("cannot connect: Connection refused").
  std::string Describe(Error e) const {
    const std::string& d = sock_.detail();
    switch (e) {
      case Error::kNone: return "ok";
      case Error::kResolve: return "cannot resolve " + host_ + ": " + d;
      case Error::kConnect: return "cannot connect: " + d;
      case Error::kHandshake: return "TLS handshake failed: " + d;
      case Error::kVerify: return "the server's TLS certificate was refused: " + d;
      case Error::kWrite: return "sending the request failed: " + d;
      case Error::kTimeout: return "no answer within " + Seconds(read_timeout_);
      case Error::kClosed: return "the connection closed before the answer was complete";
      case Error::kProtocol: return "the answer is not valid HTTP/1.1: " + protocol_error_;
      case Error::kCanceled: return "canceled";
    }
    return "unknown error";
  }

 private:
  static constexpr size_t kBufSize = 16384;
  static constexpr size_t kMaxHead = 65536;  // status line and headers together

  Error Failed(Error e) {
    sock_.Close();
    return e;
  }

  // Connects if the kept-alive connection cannot be reused, writes `text`, and readies the
  // read buffer.
  Error Begin(const std::string& text, std::chrono::milliseconds read_timeout) {
    if (!sock_.Reusable()) {
      if (Error e = sock_.Open(*tls_, host_, port_, connect_timeout_, write_timeout_); e != Error::kNone) return e;
    }
    sock_.SetReadTimeout(read_timeout);
    read_timeout_ = read_timeout;
    if (Error e = sock_.Write(text.data(), text.size()); e != Error::kNone) return Failed(e);
    buf_.reset(new char[kBufSize]);
    pos_ = len_ = 0;
    return Error::kNone;
  }

  // Keeps the connection only if the exchange ended cleanly with nothing unread.
  Error End(Error e) {
    if (e != Error::kNone || !keep_alive_ || pos_ != len_) sock_.Close();
    buf_.reset();  // a watch's buffer lives as long as its stream; a request's only as long as it
    return e;
  }

  // "METHOD path HTTP/1.1", Host, the caller's headers, Content-Type and -Length, the body.
  std::string RequestText(const Request& r) const {
    std::string m;
    m.reserve(128 + r.path.size() + r.headers.size() + r.body.size());
    m.append(r.method).append(" ");
    AppendPath(r.path, &m);
    m.append(" HTTP/1.1\r\nHost: ").append(host_header_).append("\r\n").append(r.headers);
    bool has_body = !r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH";
    if (has_body) {
      if (!r.body.empty()) m.append("Content-Type: ").append(r.content_type).append("\r\n");
      m.append("Content-Length: ").append(std::to_string(r.body.size())).append("\r\n");
    }
    m.append("\r\n").append(r.body);
    return m;
  }

  // The path as it is, but with bytes that may not appear in a request line (spaces, controls,
  // non-ASCII) percent-encoded: a value that carries them cannot split or bend the request.
  static void AppendPath(std::string_view p, std::string* out) {
    AppendPercentEncoded(p, [](unsigned char c) { return c > 0x20 && c < 0x7f; }, out);
  }

  Error ReadAnswer(const Request& r, const OnHead& on_head, const OnData& on_data) {
    Head head;
    long long length = -1;
    bool chunked = false;
    do {  // 1xx answers are informational: the real one follows
      length = -1;
      chunked = false;
      if (Error e = ReadHead(&head, &length, &chunked); e != Error::kNone) return e;
    } while (head.status >= 100 && head.status < 200);
    if (!on_head(head)) return Error::kCanceled;
    if (r.method == "HEAD" || head.status == 204 || head.status == 304) return Error::kNone;
    if (chunked) return ReadChunked(on_data);
    if (length >= 0) return ReadLength(static_cast<unsigned long long>(length), on_data);
    keep_alive_ = false;  // the body ends with the connection
    return ReadToClose(on_data);
  }

  // The status line and headers. Sets keep_alive_ from the version and Connection.
  Error ReadHead(Head* head, long long* length, bool* chunked) {
    std::string line;
    size_t budget = kMaxHead;
    if (Error e = ReadLine(&line, &budget); e != Error::kNone) return e;
    // "HTTP/1.1 200 OK"
    if (line.size() < 12 || line.compare(0, 7, "HTTP/1.") != 0 || line[8] != ' ' || !Digits(line, 9, 3) ||
        (line.size() > 12 && line[12] != ' '))
      return Protocol("bad status line \"" + line.substr(0, 64) + "\"");
    keep_alive_ = line[7] != '0';
    head->status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
    head->retry_after = 0;
    while (true) {
      if (Error e = ReadLine(&line, &budget); e != Error::kNone) return e;
      if (line.empty()) return Error::kNone;
      size_t colon = line.find(':');
      if (colon == std::string::npos || colon == 0) return Protocol("bad header line \"" + line.substr(0, 64) + "\"");
      std::string_view name(line.data(), colon);
      std::string_view value = Trim(std::string_view(line).substr(colon + 1));
      if (Is(name, "content-length")) {
        if (value.empty() || value.size() > 18 || !Digits(value, 0, value.size()))
          return Protocol("bad Content-Length \"" + std::string(value) + "\"");
        *length = std::stoll(std::string(value));
      } else if (Is(name, "transfer-encoding")) {
        *chunked = Contains(value, "chunked");
      } else if (Is(name, "connection")) {
        if (Contains(value, "close")) keep_alive_ = false;
        if (Contains(value, "keep-alive")) keep_alive_ = true;
      } else if (Is(name, "retry-after")) {
        head->retry_after = Digits(value, 0, value.size()) && value.size() < 9 ? std::atoi(std::string(value).c_str()) : 0;
      }
    }
  }

  Error ReadLength(unsigned long long n, const OnData& on_data) {
    while (n > 0) {
      if (pos_ == len_) {
        if (Error e = Fill(); e != Error::kNone) return e;
      }
      size_t take = static_cast<size_t>(std::min<unsigned long long>(n, len_ - pos_));
      if (!on_data(buf_.get() + pos_, take)) return Error::kCanceled;
      pos_ += take;
      n -= take;
    }
    return Error::kNone;
  }

  // Chunks: "<hex size>[;extension]\r\n<data>\r\n", ..., "0\r\n", trailer lines, "\r\n".
  Error ReadChunked(const OnData& on_data) {
    std::string line;
    while (true) {
      size_t budget = kMaxHead;
      if (Error e = ReadLine(&line, &budget); e != Error::kNone) return e;
      std::string_view size = Trim(std::string_view(line).substr(0, line.find(';')));
      unsigned long long n = 0;
      if (size.empty() || size.size() > 15) return Protocol("bad chunk size \"" + line.substr(0, 64) + "\"");
      for (char c : size) {
        int d = HexValue(c);
        if (d < 0) return Protocol("bad chunk size \"" + line.substr(0, 64) + "\"");
        n = n * 16 + static_cast<unsigned>(d);
      }
      if (n == 0) break;
      if (Error e = ReadLength(n, on_data); e != Error::kNone) return e;
      if (Error e = ReadLine(&line, &budget); e != Error::kNone) return e;
      if (!line.empty()) return Protocol("a chunk is longer than its size");
    }
    size_t budget = kMaxHead;
    do {  // trailers
      if (Error e = ReadLine(&line, &budget); e != Error::kNone) return e;
    } while (!line.empty());
    return Error::kNone;
  }

  Error ReadToClose(const OnData& on_data) {
    while (true) {
      if (pos_ < len_ && !on_data(buf_.get() + pos_, len_ - pos_)) return Error::kCanceled;
      pos_ = len_;
      Error e = Fill();
      if (e == Error::kClosed) return Error::kNone;
      if (e != Error::kNone) return e;
    }
  }

  // One line without its "\r\n" (a bare "\n" ends one too). `budget` bounds the bytes read.
  Error ReadLine(std::string* line, size_t* budget) {
    line->clear();
    while (true) {
      if (pos_ == len_) {
        if (Error e = Fill(); e != Error::kNone) return e;
      }
      const char* start = buf_.get() + pos_;
      const char* nl = static_cast<const char*>(std::memchr(start, '\n', len_ - pos_));
      size_t n = nl != nullptr ? static_cast<size_t>(nl - start) : len_ - pos_;
      if (n >= *budget) return Protocol("a header or chunk line longer than " + std::to_string(kMaxHead) + " bytes");
      *budget -= n + 1;
      line->append(start, n);
      pos_ += n;
      if (nl != nullptr) {
        ++pos_;
        if (!line->empty() && line->back() == '\r') line->pop_back();
        return Error::kNone;
      }
    }
  }

  Error Fill() {
    pos_ = len_ = 0;
    return sock_.Read(buf_.get(), kBufSize, &len_);
  }

  static std::string Seconds(std::chrono::milliseconds t) {
    if (t.count() % 1000 == 0) return std::to_string(t.count() / 1000) + " s";
    return std::to_string(t.count()) + " ms";
  }

  Error Protocol(std::string why) {
    protocol_error_ = std::move(why);
    return Error::kProtocol;
  }

  static bool Digits(std::string_view s, size_t from, size_t n) {
    if (from + n > s.size()) return false;
    for (size_t i = from; i < from + n; ++i)
      if (s[i] < '0' || s[i] > '9') return false;
    return true;
  }
  static int HexValue(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  static std::string_view Trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  }
  // Case-insensitive equality with a lower-case name.
  static bool Is(std::string_view name, std::string_view lower) {
    return name.size() == lower.size() && strncasecmp(name.data(), lower.data(), lower.size()) == 0;
  }
  // A comma-separated list value holds `token` (case-insensitive).
  static bool Contains(std::string_view value, std::string_view token) {
    while (!value.empty()) {
      size_t comma = value.find(',');
      if (Is(Trim(value.substr(0, comma)), token)) return true;
      if (comma == std::string_view::npos) break;
      value.remove_prefix(comma + 1);
    }
    return false;
  }

  std::shared_ptr<const TlsContext> tls_;
  std::string host_, host_header_;
  int port_;
  std::chrono::milliseconds connect_timeout_{std::chrono::seconds(10)}, write_timeout_{std::chrono::seconds(30)};
  TlsSocket sock_;
  std::unique_ptr<char[]> buf_;
  size_t pos_ = 0, len_ = 0;
  bool keep_alive_ = true;
  std::chrono::milliseconds read_timeout_{0};  // of the request in progress or last sent
  std::string protocol_error_;
};
