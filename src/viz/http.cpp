// VIZ's HTTP/1.1 server (see http.h). One thread polls the listening socket, a wake-up pipe and every client; each
// client goes Head (reading the request head) -> Write (sending one response) -> Linger (dropping what it still sends,
// so that close() does not reset the connection before it has read the response) -> closed. Nothing a client sends can
// make the server read more than kMaxHeadBytes + kMaxLingerBytes from it, hold it longer than the timeouts below, or
// end the process.
#include "viz/http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <mutex>
#include <optional>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

namespace tg::viz {
namespace {

constexpr size_t kMaxConnections = 64;                     // open clients; at the limit a new one evicts the longest idle
constexpr size_t kMaxHeadBytes = 16 * 1024;                // request line + headers + the blank line; more -> 431
constexpr auto kHeadTimeout = std::chrono::seconds(5);     // from accept to the head's last byte (slowloris) -> 408
constexpr auto kWriteTimeout = std::chrono::seconds(10);   // from the response being ready to its last byte sent -> reset
constexpr auto kLingerTimeout = std::chrono::seconds(1);   // after the response, how long to wait for the client to close
constexpr size_t kMaxLingerBytes = 1 << 20;                // ... and how much of what it still sends to read and drop
constexpr auto kAcceptBackoff = std::chrono::milliseconds(100);  // out of descriptors: the listener would wake us forever
constexpr int kListenBacklog = 128;
constexpr const char* kAllowedHosts[] = {"127.0.0.1", "localhost", "[::1]"};  // a Host naming anything else -> 403

using Clock = std::chrono::steady_clock;
using std::string_view;

enum class Phase { Head, Write, Linger };
struct Conn {
  int fd = -1;  // -1 once closed; swept out of the list at the end of each round
  Phase phase = Phase::Head;
  Clock::time_point opened, deadline;  // deadline: of the current phase
  std::string in;                      // the head so far (Head only)
  std::string out_head, out_body;      // the response, sent from two buffers so a large body is never copied
  size_t sent = 0, drained = 0;
};

// ---- parsing: a request head is either turned into (method, path) for the handler or answered with an error ---------

bool is_tchar(unsigned char c) {  // RFC 9110 token characters (method and header names)
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return string_view("!#$%&'*+-.^_`|~").find(char(c)) != string_view::npos;
}
bool is_token(string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return is_tchar((unsigned char)c); }); }
char lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }
bool iequals(string_view a, string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

HttpResponse plain(int status, const std::string& text) { return {status, "text/plain; charset=utf-8", text + "\n"}; }

// The head ends at the first empty line. Lines end in LF or CRLF (RFC 9112 lets a server accept a bare LF). `from` lets
// a caller rescan only the bytes that just arrived, so a client sending one byte at a time costs linear work.
size_t head_end(string_view s, size_t from) {
  for (size_t i = from; i < s.size(); i++) {
    if (s[i] != '\n') continue;
    if (i + 1 < s.size() && s[i + 1] == '\n') return i + 2;
    if (i + 2 < s.size() && s[i + 1] == '\r' && s[i + 2] == '\n') return i + 3;
  }
  return string_view::npos;
}

// Host: name[:port]. Only loopback names: a page on another site that rebinds its DNS name to 127.0.0.1 sends its
// own name here, and must not read what VIZ serves. The port is not checked, so an ssh tunnel to another port works.
bool allowed_host(string_view h) {
  size_t end = h.starts_with('[') ? h.find(']') : h.find(':');
  if (h.starts_with('[')) end = end == string_view::npos ? end : end + 1;
  string_view name = h.substr(0, end), port = end == string_view::npos ? string_view() : h.substr(end);
  if (!port.empty() && (port[0] != ':' || port.size() > 6 || !std::all_of(port.begin() + 1, port.end(), [](char c) { return c >= '0' && c <= '9'; })))
    return false;
  return std::any_of(std::begin(kAllowedHosts), std::end(kAllowedHosts), [&](const char* a) { return iequals(name, a); });
}

// Decodes each %XX once; a '%' without two hex digits is an error. "%252e" becomes "%2e", a name and not a dot.
std::optional<std::string> percent_decode(string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    int hi = i + 2 < s.size() ? hex_value(s[i + 1]) : -1, lo = i + 2 < s.size() ? hex_value(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) return std::nullopt;
    out += char(hi * 16 + lo);
    i += 2;
  }
  return out;
}

// A decoded path a handler may see: no NUL or other control byte, no backslash, no empty, "." or ".." segment. Checked
// after decoding, so "%2e%2e%2f" and "%5c" are caught however they were spelled.
bool safe_path(string_view p) {
  if (p.empty() || p[0] != '/' || p.find("//") != string_view::npos) return false;
  if (std::any_of(p.begin(), p.end(), [](char c) { return (unsigned char)c < 0x20 || c == 0x7f || c == '\\'; })) return false;
  for (size_t i = 1; i <= p.size();) {
    size_t j = std::min(p.find('/', i), p.size());
    string_view seg = p.substr(i, j - i);
    if (seg == "." || seg == "..") return false;
    i = j + 1;
  }
  return true;
}

// Fills *method as soon as the request line parses (so a HEAD is answered without a body even when refused) and *path
// when the request is one for the handler; otherwise returns the response to send instead.
std::optional<HttpResponse> parse_head(string_view head, std::string* method, std::string* path) {
  std::vector<string_view> lines;
  for (size_t pos = 0; pos < head.size();) {
    size_t nl = head.find('\n', pos);  // always found: the head ends with an empty line
    string_view line = head.substr(pos, nl - pos);
    if (line.ends_with('\r')) line.remove_suffix(1);
    pos = nl + 1;
    if (line.empty()) break;
    lines.push_back(line);
  }
  if (lines.empty()) return plain(400, "bad request: no request line");

  // request-line = method SP request-target SP HTTP-version, with exactly one space between the three
  string_view rl = lines[0];
  size_t sp1 = rl.find(' '), sp2 = sp1 == string_view::npos ? sp1 : rl.find(' ', sp1 + 1);
  if (sp2 == string_view::npos || rl.find(' ', sp2 + 1) != string_view::npos) return plain(400, "bad request: malformed request line");
  string_view m = rl.substr(0, sp1), target = rl.substr(sp1 + 1, sp2 - sp1 - 1), version = rl.substr(sp2 + 1);
  if (!is_token(m) || target.empty()) return plain(400, "bad request: malformed request line");
  if (std::any_of(target.begin(), target.end(), [](char c) { return (unsigned char)c <= 0x20 || (unsigned char)c >= 0x7f; }))
    return plain(400, "bad request: malformed request target");
  bool versioned = version.size() == 8 && version.starts_with("HTTP/") && version[5] >= '0' && version[5] <= '9' && version[6] == '.' &&
                   version[7] >= '0' && version[7] <= '9';
  if (!versioned) return plain(400, "bad request: malformed HTTP version");
  if (version != "HTTP/1.0" && version != "HTTP/1.1") return plain(505, "HTTP version not supported: use HTTP/1.1");
  *method = std::string(m);

  // header-field = field-name ":" OWS field-value OWS; no space before the colon, no obs-fold (RFC 9112 5.1, 5.2)
  int hosts = 0, lengths = 0;
  bool chunked = false, has_body = false, host_ok = true;
  string_view length;
  for (size_t i = 1; i < lines.size(); i++) {
    string_view line = lines[i];
    size_t colon = line.find(':');
    if (colon == string_view::npos || !is_token(line.substr(0, colon))) return plain(400, "bad request: malformed header");
    string_view name = line.substr(0, colon), value = line.substr(colon + 1);
    if (std::any_of(value.begin(), value.end(), [](char c) { return ((unsigned char)c < 0x20 && c != '\t') || c == 0x7f; }))
      return plain(400, "bad request: control character in a header");
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    if (iequals(name, "host")) {
      hosts++;
      host_ok = allowed_host(value);
    } else if (iequals(name, "content-length")) {
      bool digits = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (!digits || (lengths++ && value != length)) return plain(400, "bad request: malformed Content-Length");
      length = value;
      has_body |= value.find_first_not_of('0') != string_view::npos;  // any nonzero digit; no integer to overflow
    } else if (iequals(name, "transfer-encoding")) {
      chunked = true;
    }
  }
  if (hosts > 1) return plain(400, "bad request: more than one Host header");
  if (chunked && lengths) return plain(400, "bad request: both Content-Length and Transfer-Encoding");  // request smuggling
  if (*method != "GET" && *method != "HEAD") return plain(405, "method not allowed: only GET and HEAD");
  if (chunked || has_body) return plain(413, "content too large: requests carry no body here");
  if (!host_ok) return plain(403, "forbidden: the Host header must name 127.0.0.1 or localhost");

  // origin-form only: "http://host/x" (absolute-form) and "*" (asterisk-form) are for proxies and OPTIONS
  if (target[0] != '/') return plain(400, "bad request: the request target must start with '/'");
  std::optional<std::string> decoded = percent_decode(target.substr(0, target.find('?')));
  if (!decoded) return plain(400, "bad request: malformed percent-escape");
  if (!safe_path(*decoded)) return plain(404, "not found");
  *path = std::move(*decoded);
  return std::nullopt;
}

const char* reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 413: return "Content Too Large";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "";  // the reason phrase may be empty (RFC 9112 4)
  }
}

// What a handler returns is ours, but one bad field must not break the framing or inject a header.
HttpResponse checked(HttpResponse r) {
  if (r.status < 200 || r.status > 599 || r.status == 204 || r.status == 304) return plain(500, "internal server error");
  if (r.content_type.empty() || std::any_of(r.content_type.begin(), r.content_type.end(), [](char c) { return c < 0x20 || c > 0x7e; }))
    r.content_type = "application/octet-stream";
  return r;
}

std::string response_head(const HttpResponse& r) {
  std::string h = "HTTP/1.1 " + std::to_string(r.status) + " " + reason(r.status) + "\r\nContent-Type: " + r.content_type +
                  "\r\nContent-Length: " + std::to_string(r.body.size()) +
                  "\r\nConnection: close\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n";
  if (r.status == 405) h += "Allow: GET, HEAD\r\n";
  return h + "\r\n";
}

std::string errno_text(int e) { return std::generic_category().message(e); }

}  // namespace

struct HttpServer::Impl {
  HttpHandler handler;
  int listen_fd = -1, wake_r = -1, wake_w = -1, port = 0;
  std::atomic<bool> stopping{false};
  std::thread thread;
  std::mutex join_mu;
  std::vector<Conn> conns;
  Clock::time_point accept_paused_until{};

  ~Impl() {
    for (int fd : {listen_fd, wake_r, wake_w})
      if (fd >= 0) ::close(fd);
  }

  void run();
  void round(std::vector<pollfd>& pfds);
  void accept_all(Clock::time_point now);
  bool evict_one();
  void on_event(Conn& c, short revents, Clock::time_point now);
  void on_deadline(Conn& c, Clock::time_point now);
  void on_head(Conn& c, string_view head, Clock::time_point now);
  void respond(Conn& c, HttpResponse r, bool with_body, Clock::time_point now);
  void flush(Conn& c, Clock::time_point now);

  // abort: reset instead of an orderly close, dropping whatever the kernel still holds for a client that stopped reading
  static void close_conn(Conn& c, bool abort = false) {
    if (c.fd < 0) return;
    if (abort) {
      linger l{1, 0};
      ::setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    }
    ::close(c.fd);  // never retried on EINTR: on Linux the descriptor is gone either way
    c.fd = -1;
    c.in = c.out_head = c.out_body = std::string();
  }
  void sweep() {
    conns.erase(std::remove_if(conns.begin(), conns.end(), [](const Conn& c) { return c.fd < 0; }), conns.end());
  }
};

void HttpServer::Impl::run() {
  std::vector<pollfd> pfds;
  while (!stopping.load()) {
    try {
      round(pfds);
    } catch (...) {  // out of memory for the poll list or a new client: keep serving the others, try again shortly
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  for (Conn& c : conns) close_conn(c, true);
  conns.clear();
  ::close(listen_fd);  // here and not in stop(): a stop() from inside the handler does not join, yet refuses connections
  listen_fd = -1;
}

// One poll() and what it reports: deadlines first, then the clients, then new connections.
void HttpServer::Impl::round(std::vector<pollfd>& pfds) {
  Clock::time_point now = Clock::now();
  for (Conn& c : conns) {
    if (c.fd < 0 || now < c.deadline) continue;
    try {
      on_deadline(c, now);
    } catch (...) {  // out of memory for a 408: this client only
      close_conn(c, true);
    }
  }
  sweep();

  // [0] the wake-up pipe, [1] the listener (fd -1, ignored by poll, while accepting is paused), then one per client
  pfds.clear();
  bool accepting = now >= accept_paused_until;
  pfds.push_back({wake_r, POLLIN, 0});
  pfds.push_back({accepting ? listen_fd : -1, POLLIN, 0});
  Clock::time_point next = accepting ? Clock::time_point::max() : accept_paused_until;
  for (const Conn& c : conns) {
    pfds.push_back({c.fd, short(c.phase == Phase::Write ? POLLOUT : POLLIN), 0});
    next = std::min(next, c.deadline);
  }
  int timeout_ms = -1;
  if (next != Clock::time_point::max())
    timeout_ms = int(std::clamp<int64_t>(std::chrono::ceil<std::chrono::milliseconds>(next - now).count(), 0, INT_MAX));
  if (::poll(pfds.data(), pfds.size(), timeout_ms) < 0) {
    if (errno != EINTR) std::this_thread::sleep_for(std::chrono::milliseconds(10));  // ENOMEM: try again shortly
    return;
  }
  if (pfds[0].revents) {
    char buf[64];
    while (::read(wake_r, buf, sizeof buf) > 0) {
    }
  }
  if (stopping.load()) return;

  now = Clock::now();
  for (size_t i = 0; i < conns.size(); i++) {
    if (!pfds[i + 2].revents) continue;
    try {
      on_event(conns[i], pfds[i + 2].revents, now);
    } catch (...) {  // out of memory (or a bug) while serving one client closes that client only
      close_conn(conns[i], true);
    }
  }
  sweep();
  if (pfds[1].revents) accept_all(now);
}

void HttpServer::Impl::accept_all(Clock::time_point now) {
  for (;;) {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) accept_paused_until = now + kAcceptBackoff;
      return;  // EAGAIN: the queue is empty
    }
    if (conns.size() >= kMaxConnections && !evict_one()) {
      ::close(fd);  // every slot is sending a response: refuse rather than grow
      continue;
    }
    Conn c;
    c.fd = fd;
    c.opened = now;
    c.deadline = now + kHeadTimeout;
    try {
      conns.push_back(std::move(c));
    } catch (...) {
      ::close(fd);
      throw;
    }
  }
}

// At the limit a new client replaces one that is done (lingering) or else the one that has sent the least useful thing
// for longest: the oldest still in its head. A flood of idle connections thus cannot lock out a browser, whose request
// arrives at once after connecting and leaves the Head phase on the next round.
bool HttpServer::Impl::evict_one() {
  auto pick = conns.end();
  for (auto it = conns.begin(); it != conns.end(); ++it) {
    if (it->phase == Phase::Linger) {
      pick = it;
      break;
    }
    if (it->phase == Phase::Head && (pick == conns.end() || it->opened < pick->opened)) pick = it;
  }
  if (pick == conns.end()) return false;
  close_conn(*pick, true);
  conns.erase(pick);
  return true;
}

void HttpServer::Impl::on_deadline(Conn& c, Clock::time_point now) {
  if (c.phase == Phase::Head) return respond(c, plain(408, "request timeout: the request head took too long"), true, now);
  close_conn(c, c.phase == Phase::Write);  // Write: the client stopped reading; Linger: it did not close in time
}

void HttpServer::Impl::on_event(Conn& c, short revents, Clock::time_point now) {
  if (c.phase == Phase::Write) {
    if (revents & (POLLERR | POLLHUP | POLLNVAL)) return close_conn(c, true);
    return flush(c, now);
  }
  char buf[16 * 1024];
  if (c.phase == Phase::Linger) {  // drop what the client still sends until it closes, up to kMaxLingerBytes
    for (;;) {
      ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0 || (c.drained += size_t(n)) > kMaxLingerBytes) return close_conn(c);
    }
  }
  // Head: read no more than one byte past the limit, so an oversized head is seen without buffering it
  size_t want = std::min(sizeof buf, kMaxHeadBytes + 1 - c.in.size());
  ssize_t n;
  do n = ::recv(c.fd, buf, want, 0);
  while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
  if (n <= 0) return close_conn(c);  // closed or reset mid-request: nobody to answer
  size_t old = c.in.size();
  c.in.append(buf, size_t(n));
  size_t end = head_end(c.in, old >= 2 ? old - 2 : 0);
  if (end != string_view::npos && end <= kMaxHeadBytes) return on_head(c, string_view(c.in).substr(0, end), now);
  if (c.in.size() > kMaxHeadBytes) return respond(c, plain(431, "request header fields too large"), true, now);
}

void HttpServer::Impl::on_head(Conn& c, string_view head, Clock::time_point now) {
  std::string method, path;
  std::optional<HttpResponse> refused = parse_head(head, &method, &path);
  bool with_body = method != "HEAD";
  if (refused) return respond(c, std::move(*refused), with_body, now);
  HttpResponse r;
  try {
    r = checked(handler(method, path));
  } catch (...) {  // nothing about the exception reaches the client
    r = plain(500, "internal server error");
  }
  respond(c, std::move(r), with_body, now);
}

void HttpServer::Impl::respond(Conn& c, HttpResponse r, bool with_body, Clock::time_point now) {
  c.in = std::string();  // anything after the head (a body, a pipelined request) is never looked at
  c.out_head = response_head(r);
  if (with_body) c.out_body = std::move(r.body);
  c.sent = 0;
  c.phase = Phase::Write;
  c.deadline = now + kWriteTimeout;
  flush(c, now);
}

void HttpServer::Impl::flush(Conn& c, Clock::time_point now) {
  for (;;) {
    size_t total = c.out_head.size() + c.out_body.size();
    if (c.sent == total) break;
    iovec iov[2];
    int n_iov = 0;
    if (c.sent < c.out_head.size()) iov[n_iov++] = {c.out_head.data() + c.sent, c.out_head.size() - c.sent};
    size_t body_off = c.sent > c.out_head.size() ? c.sent - c.out_head.size() : 0;
    if (body_off < c.out_body.size()) iov[n_iov++] = {c.out_body.data() + body_off, c.out_body.size() - body_off};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = size_t(n_iov);
    ssize_t n = ::sendmsg(c.fd, &msg, MSG_NOSIGNAL);  // a client gone away is EPIPE here, not a SIGPIPE for the process
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0) return close_conn(c, true);
    c.sent += size_t(n);
  }
  // all sent: FIN to the client, then Linger until it closes its side
  c.out_head = c.out_body = std::string();
  ::shutdown(c.fd, SHUT_WR);
  c.phase = Phase::Linger;
  c.deadline = now + kLingerTimeout;
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { stop(); }

int HttpServer::port() const { return impl_->port; }

void HttpServer::stop() {
  Impl& s = *impl_;
  if (!s.stopping.exchange(true)) {
    char b = 1;
    while (::write(s.wake_w, &b, 1) < 0 && errno == EINTR) {
    }
  }
  if (std::this_thread::get_id() == s.thread.get_id()) return;  // from the handler: the loop ends once it returns
  std::lock_guard<std::mutex> lock(s.join_mu);
  if (s.thread.joinable()) s.thread.join();
}

std::unique_ptr<HttpServer> HttpServer::start(int port, HttpHandler handler, std::string* err) {
  auto fail = [&](const std::string& msg) -> std::unique_ptr<HttpServer> {
    if (err) *err = msg;
    return nullptr;
  };
  std::string where = "port " + std::to_string(port) + " on 127.0.0.1";
  if (port < 0 || port > 65535) return fail("VIZ: port " + std::to_string(port) + " is out of range 0-65535 (set VIZ_PORT)");
  if (!handler) return fail("VIZ: no request handler");

  auto impl = std::make_unique<Impl>();
  impl->handler = std::move(handler);
  // CLOEXEC: a compiler or other child the process starts must not inherit the listener and keep the port bound
  impl->listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (impl->listen_fd < 0) return fail("VIZ: cannot create a socket: " + errno_text(errno));
  // SO_REUSEADDR: a restarted process rebinds despite connections in TIME_WAIT; still refuses a port someone listens
  // on. Not SO_REUSEPORT, which would let two processes share (and split) the port.
  int one = 1;
  ::setsockopt(impl->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(impl->listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(impl->listen_fd, kListenBacklog) != 0) {
    int e = errno;
    if (e == EADDRINUSE) return fail("VIZ: " + where + " is in use (set VIZ_PORT)");
    if (e == EACCES) return fail("VIZ: no permission to bind " + where + " (set VIZ_PORT to 1024 or above)");
    return fail("VIZ: cannot listen on " + where + ": " + errno_text(e));
  }
  socklen_t len = sizeof addr;
  if (::getsockname(impl->listen_fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return fail("VIZ: getsockname: " + errno_text(errno));
  impl->port = ntohs(addr.sin_port);

  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return fail("VIZ: cannot create a pipe: " + errno_text(errno));
  impl->wake_r = fds[0];
  impl->wake_w = fds[1];
  Impl* s = impl.get();
  try {
    impl->thread = std::thread([s] { s->run(); });
  } catch (const std::system_error& e) {
    return fail(std::string("VIZ: cannot start the server thread: ") + e.what());
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

}  // namespace tg::viz
