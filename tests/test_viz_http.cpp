// VIZ's HTTP server against hostile clients, over raw sockets: path traversal in every spelling, oversized and malformed
// heads, methods and bodies it refuses, slowloris, idle floods, clients that vanish or never read. After each hostile
// input a good request must still be answered, and the handler must never have seen a path it should not.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "viz/http.h"

namespace {

using namespace std::chrono_literals;
using namespace std::string_literals;
using Clock = std::chrono::steady_clock;
using tg::viz::HttpResponse;
using tg::viz::HttpServer;

const std::string kGood = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
constexpr size_t kBig = 8u << 20;  // /big's body: far more than the kernel buffers of a client that does not read

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// A connected socket to 127.0.0.1:port, or -1. rcvbuf > 0 shrinks the receive buffer (set before connect, so the
// window is small from the start).
int connect_to(int port, int rcvbuf = 0) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (rcvbuf > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// false once the server has closed or reset the connection (MSG_NOSIGNAL: the test process must not get SIGPIPE either)
bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(size_t(n));
  }
  return true;
}

struct Read {
  std::string data;
  bool closed = false;  // the server closed or reset the connection (rather than the timeout running out)
};
// Everything until the server closes, an error, or `timeout` passes.
Read read_all(int fd, std::chrono::milliseconds timeout = 3000ms) {
  Read r;
  auto until = Clock::now() + timeout;
  char buf[64 * 1024];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) return r;
    pollfd p{fd, POLLIN, 0};
    int k = ::poll(&p, 1, int(left));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return r;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      r.closed = true;
      return r;
    }
    r.data.append(buf, size_t(n));
  }
}

// One connection: send `request` whole, read the answer to the end.
std::string roundtrip(int port, std::string_view request) {
  int fd = connect_to(port);
  if (fd < 0) return "(connect failed: " + std::string(std::strerror(errno)) + ")";
  send_all(fd, request);  // the server may answer (and close) before the whole request is sent
  std::string out = read_all(fd).data;
  ::close(fd);
  return out;
}

int status_of(const std::string& resp) {  // "HTTP/1.1 200 OK\r\n..." -> 200; 0 when there is no status line
  if (resp.size() < 12 || resp.compare(0, 9, "HTTP/1.1 ") != 0) return 0;
  return std::atoi(resp.substr(9, 3).c_str());
}
std::string body_of(const std::string& resp) {
  size_t e = resp.find("\r\n\r\n");
  return e == std::string::npos ? "" : resp.substr(e + 4);
}
bool has_header(const std::string& resp, const std::string& line) {
  return resp.substr(0, resp.find("\r\n\r\n") + 2).find("\r\n" + line + "\r\n") != std::string::npos;
}

class VizHttp : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string err;
    server = HttpServer::start(
        0,
        [this](const std::string& method, const std::string& path) {
          {
            std::lock_guard<std::mutex> lock(mu);
            seen.push_back(path);
            methods.push_back(method);
          }
          if (path == "/") return HttpResponse{200, "text/html", "hello"};
          if (path == "/api/x") return HttpResponse{200, "application/json", R"({"x":1})"};
          if (path == "/big") return HttpResponse{200, "application/octet-stream", std::string(kBig, 'b')};
          if (path == "/throw") throw std::runtime_error("secret internal detail");
          if (path == "/bad-type") return HttpResponse{200, "text/html\r\nSet-Cookie: x=1", "typed"};
          return HttpResponse{404, "text/plain", "no such page"};
        },
        &err);
    ASSERT_TRUE(server) << err;
    port = server->port();
    ASSERT_GT(port, 0);
  }
  size_t handler_calls() {
    std::lock_guard<std::mutex> lock(mu);
    return seen.size();
  }
  // A good request is answered in full, and fast.
  void expect_alive() {
    auto t0 = Clock::now();
    std::string r = roundtrip(port, kGood);
    EXPECT_EQ(status_of(r), 200) << r;
    EXPECT_EQ(body_of(r), "hello");
    EXPECT_LT(seconds_since(t0), 1.0);
  }
  // `request` gets one of `statuses`, without reaching the handler (and so never with its content)
  void expect_refused(const std::string& request, std::initializer_list<int> statuses) {
    size_t calls = handler_calls();
    std::string r = roundtrip(port, request);
    int st = status_of(r);
    EXPECT_TRUE(std::find(statuses.begin(), statuses.end(), st) != statuses.end()) << "status " << st << " for " << testing::PrintToString(request);
    EXPECT_EQ(r.find("hello"), std::string::npos);
    EXPECT_EQ(r.find("no such page"), std::string::npos);
    EXPECT_EQ(handler_calls(), calls) << "the handler saw " << testing::PrintToString(request);
  }
  static std::string get(const std::string& target) { return "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"; }

  std::unique_ptr<HttpServer> server;
  int port = 0;
  std::mutex mu;
  std::vector<std::string> seen, methods;  // every path (and its method) the handler was called with
};

TEST_F(VizHttp, GetAndHead) {
  std::string r = roundtrip(port, kGood);
  EXPECT_EQ(status_of(r), 200) << r;
  EXPECT_EQ(body_of(r), "hello");
  for (const char* h :
       {"Content-Type: text/html", "Content-Length: 5", "Connection: close", "Cache-Control: no-store", "X-Content-Type-Options: nosniff"})
    EXPECT_TRUE(has_header(r, h)) << h << " missing in " << r;

  r = roundtrip(port, "HEAD / HTTP/1.1\r\nHost: localhost:1234\r\n\r\n");  // HEAD: same headers, no body
  EXPECT_EQ(status_of(r), 200) << r;
  EXPECT_TRUE(has_header(r, "Content-Length: 5")) << r;
  EXPECT_EQ(body_of(r), "");

  r = roundtrip(port, get("/api/%78?q=../../etc/passwd#frag"));  // decoded once, query dropped
  EXPECT_EQ(status_of(r), 200) << r;
  EXPECT_TRUE(has_header(r, "Content-Type: application/json")) << r;
  EXPECT_EQ(body_of(r), R"({"x":1})");

  r = roundtrip(port, "GET /nope HTTP/1.0\n\n");  // HTTP/1.0, bare LF line ends, no Host
  EXPECT_EQ(status_of(r), 404) << r;
  EXPECT_EQ(body_of(r), "no such page");
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(seen, (std::vector<std::string>{"/", "/", "/api/x", "/nope"}));
  EXPECT_EQ(methods, (std::vector<std::string>{"GET", "HEAD", "GET", "GET"}));
}

TEST_F(VizHttp, TraversalNeverReachesTheHandler) {
  for (const char* target : {"/../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/%2E%2E/", "/..%2f..%2fetc%2fpasswd", "//etc/passwd", "/a//b", "/a/./b",
                             "/a/.", "/.", "/..", "/a/..", "/a/.%2e/b", "/a/%2e/b", "/a\\..\\b", "/a%5c..%5cb", "/%00", "/a%00.html",
                             "/a%0d%0aSet-Cookie:%20x", "/%7f", "/%2f%2fetc"})
    expect_refused(get(target), {404});
  for (const char* target : {"http://127.0.0.1/", "http://127.0.0.1/../etc/passwd", "*", "etc/passwd", "/%", "/%2", "/%zz", "/%%32%65"})
    expect_refused(get(target), {400});
  // HEAD of a refused path: the refusal's headers only
  std::string r = roundtrip(port, "HEAD /../x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(status_of(r), 404);
  EXPECT_EQ(body_of(r), "");

  // decoded once only: "%252e%252e" reaches the handler as the harmless name "%2e%2e", which it does not know
  r = roundtrip(port, get("/%252e%252e/%252e%252e/etc/passwd"));
  EXPECT_EQ(status_of(r), 404) << r;
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(seen, (std::vector<std::string>{"/%2e%2e/%2e%2e/etc/passwd"}));
  }
  expect_alive();
}

TEST_F(VizHttp, OversizedHeadIs431) {
  std::string head = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  while (head.size() < 100 * 1024) head += "X-Filler: " + std::string(100, 'a') + "\r\n";
  expect_refused(head + "\r\n", {431});
  expect_refused(std::string(20000, 'A'), {431});  // no line end at all
  expect_refused("GET /" + std::string(17000, 'a') + " HTTP/1.1\r\n\r\n", {431});
  expect_alive();
  // just under the limit is still fine
  std::string ok = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filler: " + std::string(15 * 1024, 'a') + "\r\n\r\n";
  std::string r = roundtrip(port, ok);
  EXPECT_EQ(status_of(r), 200) << r.substr(0, 200);
}

TEST_F(VizHttp, MalformedIs400) {
  const std::string junk = "\x00\xff\x01GET\x80 /\x7f\r\n\x00\x00"s;
  for (const std::string& req : std::vector<std::string>{
           "hello\r\n\r\n", "\r\n\r\n", "GET /\r\n\r\n", "GET / \r\n\r\n", "GET  / HTTP/1.1\r\n\r\n", "GET / HTTP/1.1 \r\n\r\n",
           "GET / http/1.1\r\n\r\n", "GET / HTTP/1\r\n\r\n", "GET / HTTP/1.1\r\nNoColonHere\r\n\r\n", "GET / HTTP/1.1\r\n: empty-name\r\n\r\n",
           "GET / HTTP/1.1\r\nHost : x\r\n\r\n", "GET / HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n", "GET / HTTP/1.1\r\nX-A: a\rb\r\n\r\n",
           "GET / HTTP/1.1\r\nX-A: a\x01\r\n\r\n", "GET /\x01 HTTP/1.1\r\n\r\n", "G\x00T / HTTP/1.1\r\n\r\n"s, "GET /\xc3\xa9 HTTP/1.1\r\n\r\n",
           "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: x\r\n\r\n", junk + "\r\n\r\n", std::string(300, '\xde') + "\r\n\r\n"})
    expect_refused(req, {400});
  expect_refused("GET / HTTP/2.0\r\n\r\n", {505});
  expect_alive();
}

TEST_F(VizHttp, RandomJunkNeverHurts) {
  std::mt19937 rng(1234);
  for (int i = 0; i < 200; i++) {
    std::string req(rng() % 600, '\0');
    for (char& c : req) c = char(rng() % 4 == 0 ? " \r\n:/%."[rng() % 7] : rng());
    if (i % 2) req = "GET /" + req;
    std::string r = roundtrip(port, req + "\r\n\r\n");
    int st = status_of(r);
    EXPECT_TRUE(st == 400 || st == 404 || st == 405 || st == 505) << st << " for " << testing::PrintToString(req);
  }
  expect_alive();
}

TEST_F(VizHttp, OnlyGetAndHeadAre405) {
  for (const char* m : {"POST", "PUT", "DELETE", "OPTIONS", "PATCH", "CONNECT", "TRACE", "get"}) {
    std::string r = roundtrip(port, std::string(m) + " / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    EXPECT_EQ(status_of(r), 405) << m << ": " << r;
    EXPECT_TRUE(has_header(r, "Allow: GET, HEAD")) << r;
  }
  EXPECT_EQ(handler_calls(), 0u);
  expect_alive();
}

TEST_F(VizHttp, RequestBodyIsRefused) {
  const std::string h = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  expect_refused(h + "Content-Length: 10\r\n\r\n0123456789", {413});
  expect_refused(h + "Content-Length: 1000000000000000000000000\r\n\r\n", {413});  // no integer overflow
  expect_refused(h + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", {413});
  expect_refused(h + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", {400});
  expect_refused(h + "Content-Length: abc\r\n\r\n", {400});
  expect_refused(h + "Content-Length: -1\r\n\r\n", {400});
  expect_refused(h + "Content-Length: 0\r\nContent-Length: 5\r\n\r\n", {400});
  expect_refused("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\n\r\nabc", {405});
  // a large body sent after the head is dropped, and the 413 still gets through (no reset before it is read)
  std::string r = roundtrip(port, h + "Content-Length: 2000000\r\n\r\n" + std::string(2000000, 'z'));
  EXPECT_EQ(status_of(r), 413) << r;
  r = roundtrip(port, h + "Content-Length: 0\r\n\r\n");  // an empty body is no body
  EXPECT_EQ(status_of(r), 200) << r;
  expect_alive();
}

TEST_F(VizHttp, HostMustBeLoopback) {  // DNS rebinding: a web page's own name in Host
  for (const char* host : {"evil.example", "evil.example:8000", "127.0.0.1.evil.example", "localhost.evil", "127.0.0.1:80x", ""})
    expect_refused("GET / HTTP/1.1\r\nHost: " + std::string(host) + "\r\n\r\n", {403});
  for (const char* host : {"127.0.0.1", "127.0.0.1:8000", "LOCALHOST:9", "localhost", "[::1]:8000"}) {
    std::string r = roundtrip(port, "GET / HTTP/1.1\r\nHost: " + std::string(host) + "\r\n\r\n");
    EXPECT_EQ(status_of(r), 200) << host << ": " << r;
  }
}

TEST_F(VizHttp, HandlerFailuresAre500WithoutDetails) {
  std::string r = roundtrip(port, get("/throw"));
  EXPECT_EQ(status_of(r), 500) << r;
  EXPECT_EQ(r.find("secret"), std::string::npos) << r;
  r = roundtrip(port, get("/bad-type"));  // a header injection through Content-Type is neutralized
  EXPECT_EQ(status_of(r), 200) << r;
  EXPECT_EQ(r.find("Set-Cookie"), std::string::npos) << r;
  EXPECT_TRUE(has_header(r, "Content-Type: application/octet-stream")) << r;
  expect_alive();
}

// The one slow test: a slowloris client (one byte per 500 ms) and a client that never reads an 8 MiB response, started
// together. Good requests meanwhile are answered at once; the slow one gets 408 after 5 s, the stalled one is reset
// after 10 s.
TEST_F(VizHttp, SlowClientsAreCutOff) {
  int stalled = connect_to(port, 4096), fd = connect_to(port);
  ASSERT_GE(stalled, 0);
  ASSERT_GE(fd, 0);
  auto t0 = Clock::now();
  std::atomic<double> cut_at{-1};
  std::string slow_reply;
  std::thread slow([&] {
    const std::string dribble = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + std::string(100, 'a');
    for (char c : dribble) {
      if (!send_all(fd, std::string_view(&c, 1))) break;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 500) > 0) break;  // the server answered
      if (seconds_since(t0) > 12) break;
    }
    cut_at = seconds_since(t0);
    slow_reply = read_all(fd, 2000ms).data;
    ::close(fd);
  });
  EXPECT_TRUE(send_all(stalled, get("/big")));

  std::this_thread::sleep_for(1s);
  for (int i = 0; i < 3; i++) {
    expect_alive();  // < 1 s each while both slow clients hold their connections
    std::this_thread::sleep_for(500ms);
  }
  EXPECT_LT(cut_at.load(), 0) << "the slow client was cut off before 5 s";
  slow.join();
  EXPECT_EQ(status_of(slow_reply), 408) << slow_reply;
  EXPECT_GE(cut_at.load(), 4.5);
  EXPECT_LE(cut_at.load(), 7.0);
  expect_alive();

  // by 10.5 s the server has given up on the stalled reader: reading now ends early, short of the 8 MiB
  std::this_thread::sleep_until(t0 + 10500ms);
  Read rest = read_all(stalled, 3000ms);
  EXPECT_TRUE(rest.closed);
  EXPECT_LT(rest.data.size(), kBig);
  EXPECT_LT(seconds_since(t0), 12.0);
  ::close(stalled);
  expect_alive();
}

TEST_F(VizHttp, IdleFloodDoesNotLockOut) {
  std::vector<int> idle;
  for (int i = 0; i < 100; i++) {
    int fd = connect_to(port);
    ASSERT_GE(fd, 0) << i;
    idle.push_back(fd);
  }
  for (int i = 0; i < 5; i++) expect_alive();
  // at most 64 open: the server dropped the oldest idle clients to make room
  std::vector<pollfd> ps;
  for (int fd : idle) ps.push_back({fd, POLLIN, 0});
  std::this_thread::sleep_for(50ms);
  EXPECT_GE(::poll(ps.data(), ps.size(), 0), 100 - 64);
  for (int fd : idle) ::close(fd);
  expect_alive();
}

TEST_F(VizHttp, ClientsThatVanish) {
  int fd = connect_to(port);  // closes mid-request
  ASSERT_TRUE(send_all(fd, "GET / HT"));
  ::close(fd);
  fd = connect_to(port);  // half-closes mid-request
  ASSERT_TRUE(send_all(fd, "GET / HTTP/1.1\r\nHo"));
  ::shutdown(fd, SHUT_WR);
  EXPECT_TRUE(read_all(fd).closed);
  ::close(fd);
  fd = connect_to(port);  // resets mid-request
  ASSERT_TRUE(send_all(fd, "GET / HTTP/1.1\r\n"));
  linger l{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd);
  // ask for 8 MiB and close (or reset) without reading: the server's sends fail with EPIPE, which must not be a SIGPIPE
  for (int i = 0; i < 10; i++) {
    fd = connect_to(port);
    ASSERT_TRUE(send_all(fd, get("/big")));
    if (i % 2) ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    ::close(fd);
  }
  EXPECT_EQ(status_of(roundtrip(port, kGood)), 200);  // waits for the handler to build those ten bodies (slow under TSan)
  expect_alive();
}

TEST_F(VizHttp, StalledReaderDoesNotBlockOthers) {
  std::vector<int> stalled;
  for (int i = 0; i < 4; i++) {
    int fd = connect_to(port, 4096);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(send_all(fd, get("/big")));
    stalled.push_back(fd);
  }
  for (int i = 0; i < 5; i++) expect_alive();
  // a client that does read gets all 8 MiB
  int fd = connect_to(port);
  ASSERT_TRUE(send_all(fd, get("/big")));
  Read r = read_all(fd, 5000ms);
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(body_of(r.data).size(), kBig);
  ::close(fd);
  for (int s : stalled) ::close(s);
  expect_alive();
}

TEST_F(VizHttp, PipelinedRequestsGetOneAnswer) {  // Connection: close; the second request is never read
  std::string r = roundtrip(port, kGood + get("/api/x"));
  EXPECT_EQ(status_of(r), 200);
  EXPECT_EQ(body_of(r), "hello");
  EXPECT_EQ(handler_calls(), 1u);
}

TEST_F(VizHttp, PortInUse) {
  std::string err;
  auto other = HttpServer::start(port, [](const std::string&, const std::string&) { return HttpResponse{}; }, &err);
  EXPECT_FALSE(other);
  EXPECT_EQ(err, "VIZ: port " + std::to_string(port) + " on 127.0.0.1 is in use (set VIZ_PORT)");
  for (int bad : {-1, 65536}) {
    err.clear();
    EXPECT_FALSE(HttpServer::start(bad, [](const std::string&, const std::string&) { return HttpResponse{}; }, &err));
    EXPECT_NE(err.find("out of range"), std::string::npos) << err;
  }
  EXPECT_FALSE(HttpServer::start(0, nullptr, &err));
  expect_alive();
}

TEST_F(VizHttp, StopIsIdempotentAndRefuses) {
  expect_alive();  // leaves a connection in TIME_WAIT on the server's side
  int idle = connect_to(port);
  ASSERT_GE(idle, 0);
  std::thread other([&] { server->stop(); });
  server->stop();
  other.join();
  server->stop();
  EXPECT_TRUE(read_all(idle, 1000ms).closed);  // open connections are closed too
  ::close(idle);
  errno = 0;
  EXPECT_EQ(connect_to(port), -1);
  EXPECT_EQ(errno, ECONNREFUSED);
  server.reset();
  // SO_REUSEADDR: the same port binds again at once despite TIME_WAIT
  std::string err;
  server = HttpServer::start(port, [](const std::string&, const std::string&) { return HttpResponse{200, "text/plain", "hello"}; }, &err);
  ASSERT_TRUE(server) << err;
  expect_alive();
}

TEST_F(VizHttp, StopFromTheHandler) {
  std::string err;
  std::unique_ptr<HttpServer> self;
  std::atomic<HttpServer*> p{nullptr};
  self = HttpServer::start(0, [&](const std::string&, const std::string&) {
    p.load()->stop();  // only asks the loop to end: joining here would deadlock
    return HttpResponse{200, "text/plain", "bye"};
  }, &err);
  ASSERT_TRUE(self) << err;
  p = self.get();
  int self_port = self->port();
  std::string r = roundtrip(self_port, kGood);
  EXPECT_TRUE(status_of(r) == 200 || status_of(r) == 0) << r;  // answered or cut: the loop ends either way, no deadlock
  self.reset();  // joins
  EXPECT_EQ(connect_to(self_port), -1);
  expect_alive();  // the fixture's server is unaffected
}

}  // namespace
